/**
 * Tool-host worker entrypoint: executes approved tool calls off the main thread and owns the
 * child processes they start (bash process groups, MCP stdio servers). Answers the tool-host
 * channel of src/runtime/tool-host-channel.ts (the RPC layer carries ids, cancels and the
 * handshake, whose init is the settings). Thin by design.
 */
import { metaWithTrace, withTraceCarrier } from "../src/telemetry/client-spans.ts";
import { ServerPool } from "../src/mcp/server-pool.ts";
import type { McpServerState } from "../src/mcp/types.ts";
import { EMPTY_ALLOW_LIST, parseOutboundAllowList } from "../src/net/outbound-allow-list.ts";
import { OutboundGuard } from "../src/net/outbound-guard.ts";
import type { ToolRunResult } from "../src/core/tool-catalog.ts";
import { RpcConnection } from "../src/rpc/rpc-connection.ts";
import { workerScopeTransport } from "../src/rpc/worker-port-transport.ts";
import { TOOL_HOST_CHANNEL, type ToolHostSettings, type ToolHostSide } from "../src/runtime/tool-host-channel.ts";
import { killAllBashGroups } from "../src/tools/bash-tool.ts";
import { type BuiltinSettings, childEnvironment, runBuiltin } from "../src/tools/builtin-tools.ts";
import { toolEnvironment } from "../src/tools/tool-environment.ts";

declare const self: Worker;

let settings: BuiltinSettings = { root: process.cwd(), disabled: new Set() };
let servers: ServerPool | undefined;
let serverEnv: Record<string, string | undefined> = process.env;
/** Configure/discover requests run one after another so a reload never races a listing. */
let mcpQueue: Promise<unknown> = Promise.resolve();

const main = RpcConnection.accept(TOOL_HOST_CHANNEL, workerScopeTransport(self), { onHello: configure });

/** The startup check validated the entries; a list that still fails to parse opens nothing. */
function outboundGuard(entries: string[]): OutboundGuard {
  const parsed = parseOutboundAllowList(entries);
  return new OutboundGuard({ allow: parsed.ok ? parsed.value : EMPTY_ALLOW_LIST });
}

/** The handshake's settings: tool servers inherit the daemon's environment minus its secrets (mcp.json env_mode); bash gets the allow list. */
function configure(init: ToolHostSettings): void {
  serverEnv = childEnvironment(init.hiddenEnv ?? []);
  settings = {
    root: init.root,
    disabled: new Set(init.disabled),
    env: toolEnvironment(process.env, init.envPassthrough ?? [], init.hiddenEnv ?? []),
    outbound: outboundGuard(init.outboundAllow ?? []),
  };
  if (init.mcp) void (mcpQueue = pool().configure(init.mcp));
}

function pool(): ServerPool {
  // A status change nobody asked for (a server exited or failed): the main side updates /mcp.
  servers ??= new ServerPool(serverEnv, settings.root, () =>
    queueMicrotask(() => main.notify("mcp-state", { servers: servers?.states() ?? [] })),
  );
  return servers;
}

async function run(params: ToolHostSide["requests"]["run"]["params"], signal: AbortSignal): Promise<ToolRunResult> {
  const { call, mcp } = params;
  try {
    return await withTraceCarrier(params.trace, () =>
      mcp
        ? pool().call(mcp.server, mcp.tool, call.args, signal, metaWithTrace(mcp.meta, params.trace))
        : runBuiltin(call, settings, signal),
    );
  } catch (error) {
    return {
      output: { error: `tool host failed: ${error instanceof Error ? error.message : String(error)}` },
      isError: true,
    };
  }
}

/** Runs after every earlier configure/discover; answers the servers' states, whatever `work` did. */
function queued(work: () => Promise<unknown>): Promise<McpServerState[]> {
  const done = mcpQueue
    .then(work)
    .catch(() => {})
    .then(() => servers?.states() ?? []);
  mcpQueue = done;
  return done;
}

main
  .handle("run", run, { cancelable: true })
  .handle("mcp-configure", (params) => queued(() => pool().configure(params.config)))
  .handle("mcp-discover", (params) => queued(() => pool().discover(params.names)))
  .handle("shutdown", async () => {
    main.abortIncoming(new DOMException("the daemon is shutting down", "AbortError"));
    killAllBashGroups();
    // Every tool server at once: SIGTERM, grace, SIGKILL each.
    await (servers?.stopAll() ?? Promise.resolve());
    return undefined;
  });
