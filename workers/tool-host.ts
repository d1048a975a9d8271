/**
 * Tool-host worker entrypoint: executes approved tool calls off the main thread and owns the
 * child processes they start (bash process groups, MCP stdio servers). Speaks only the typed
 * protocol of src/runtime/tool-host-channel.ts. Thin by design.
 */
import { ServerPool } from "../src/mcp/server-pool.ts";
import { EMPTY_ALLOW_LIST, parseOutboundAllowList } from "../src/net/outbound-allow-list.ts";
import { OutboundGuard } from "../src/net/outbound-guard.ts";
import { killAllBashGroups } from "../src/tools/bash-tool.ts";
import { type BuiltinSettings, childEnvironment, runBuiltin } from "../src/tools/builtin-tools.ts";
import { toolEnvironment } from "../src/tools/tool-environment.ts";
import {
  type FromToolHost,
  TOOL_HOST_VERSION,
  type ToToolHost,
  isToToolHost,
} from "../src/runtime/tool-host-channel.ts";

declare const self: Worker;

const running = new Map<number, AbortController>();
let settings: BuiltinSettings = { root: process.cwd(), disabled: new Set() };
let servers: ServerPool | undefined;
let serverEnv: Record<string, string | undefined> = process.env;
/** Configure/discover requests run one after another so a reload never races a listing. */
let mcpQueue: Promise<unknown> = Promise.resolve();

function post(message: FromToolHost): void {
  self.postMessage(message);
}

/** The startup check validated the entries; a list that still fails to parse opens nothing. */
function outboundGuard(entries: string[]): OutboundGuard {
  const parsed = parseOutboundAllowList(entries);
  return new OutboundGuard({ allow: parsed.ok ? parsed.value : EMPTY_ALLOW_LIST });
}

function pool(): ServerPool {
  // id 0: a status change nobody asked for (a server exited or failed); the main side updates /mcp.
  servers ??= new ServerPool(serverEnv, settings.root, () =>
    queueMicrotask(() => post({ type: "mcp-state", id: 0, servers: servers?.states() ?? [] })),
  );
  return servers;
}

async function run(message: Extract<ToToolHost, { type: "run" }>): Promise<void> {
  const { id, call, mcp } = message;
  const controller = new AbortController();
  running.set(id, controller);
  try {
    const outcome = mcp
      ? await pool().call(mcp.server, mcp.tool, call.args, controller.signal)
      : await runBuiltin(call, settings, controller.signal);
    post({ type: "result", id, result: outcome });
  } catch (error) {
    post({
      type: "result",
      id,
      result: {
        output: { error: `tool host failed: ${error instanceof Error ? error.message : String(error)}` },
        isError: true,
      },
    });
  } finally {
    running.delete(id);
  }
}

function queued(id: number, work: () => Promise<unknown>): void {
  mcpQueue = mcpQueue
    .then(work)
    .catch(() => {})
    .then(() => post({ type: "mcp-state", id, servers: servers?.states() ?? [] }));
}

self.onmessage = (event: MessageEvent) => {
  const message = event.data;
  if (!isToToolHost(message)) return;
  switch (message.type) {
    case "hello":
      // Tool servers inherit the daemon's environment minus its secrets (mcp.json env_mode); bash gets the allow list.
      serverEnv = childEnvironment(message.settings.hiddenEnv ?? []);
      settings = {
        root: message.settings.root,
        disabled: new Set(message.settings.disabled),
        env: toolEnvironment(process.env, message.settings.envPassthrough ?? [], message.settings.hiddenEnv ?? []),
        outbound: outboundGuard(message.settings.outboundAllow ?? []),
      };
      if (message.settings.mcp) void (mcpQueue = pool().configure(message.settings.mcp));
      post({ type: "ready", version: TOOL_HOST_VERSION });
      break;
    case "run":
      void run(message);
      break;
    case "cancel":
      running.get(message.id)?.abort(new DOMException("the turn was cancelled", "AbortError"));
      break;
    case "mcp-configure":
      queued(message.id, () => pool().configure(message.config));
      break;
    case "mcp-discover":
      queued(message.id, () => pool().discover(message.names));
      break;
    case "shutdown":
      for (const controller of running.values())
        controller.abort(new DOMException("the daemon is shutting down", "AbortError"));
      killAllBashGroups();
      // Every tool server at once: SIGTERM, grace, SIGKILL each.
      void (servers?.stopAll() ?? Promise.resolve()).finally(() => post({ type: "closed" }));
      break;
  }
};
