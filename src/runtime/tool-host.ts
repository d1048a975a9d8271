/**
 * ToolHost: the main thread's side of the tool-host worker (ARCHITECTURE "Tool host worker").
 * Approved calls go to the worker, which runs them and owns their child processes, so a slow or
 * hung tool never blocks the HTTP loop; they talk over one RPC connection (rpc/, the
 * channel of tool-host-channel.ts). A call's abort signal (turn cancel) is forwarded as a
 * cancel; a worker that dies or exits fails its calls and is started again on the next call. Also the
 * read model of what tools exist: the builtin specs the model is offered and GET /tools rows.
 *
 * Tool servers: with an McpManager, the servers' tools join `list()` / `specs()` (source `mcp`,
 * `server` set) and their classes join `classOf()`; their calls run in the same worker, which
 * holds the MCP clients and stdio children (src/mcp/).
 */
import { mcpCallSpan } from "../telemetry/mcp-spans.ts";
import { activeCarrier } from "../telemetry/turn-trace.ts";
import type { ToolCall } from "../core/events.ts";
import type { ToolSpec } from "../core/model.ts";
import type { ToolClass } from "../core/permission-policy.ts";
import type { ToolCatalog, ToolInfo, ToolRunOptions, ToolRunResult, ToolRunner } from "../core/tool-catalog.ts";
import type { McpManager } from "../mcp/mcp-manager.ts";
import type { McpServerState } from "../mcp/types.ts";
import { BUILTIN_TOOLS, builtinClass, builtinSpecs } from "../tools/builtin-tools.ts";
import { RpcConnection } from "../rpc/rpc-connection.ts";
import { type RpcError, RpcVersionError } from "../rpc/rpc-error.ts";
import { workerTransport } from "../rpc/worker-port-transport.ts";
import {
  TOOL_HOST_CHANNEL,
  type ToolHostMainSide,
  type ToolHostRunParams,
  type ToolHostSettings,
  type ToolHostSide,
} from "./tool-host-channel.ts";
import { workerUrl } from "../rpc/worker-urls.ts";

export type ToolHostFactory = () => Worker;

export const defaultToolHostFactory: ToolHostFactory = () => new Worker(workerUrl("tool-host"));

/** How long shutdown waits for the worker to kill its children (beyond the tool servers' grace) before terminating it. */
const CLOSE_GRACE_MS = 3000;

type ToolHostConnection = RpcConnection<ToolHostMainSide, ToolHostSide, ToolHostSettings>;

/** The model reads this when its call was not finished (the worker was lost, or the daemon stopped). */
function unfinished(error: RpcError): ToolRunResult {
  return { output: { error: error.message }, isError: true };
}

export class ToolHost implements ToolRunner, ToolCatalog {
  readonly #settings: ToolHostSettings;
  readonly #disabled: ReadonlySet<string>;
  readonly #factory: ToolHostFactory;
  readonly #log: (message: string) => void;
  readonly #mcp: McpManager | undefined;
  #connection: ToolHostConnection | undefined;
  #closed = false;

  constructor(
    settings: ToolHostSettings,
    options: { factory?: ToolHostFactory; log?: (message: string) => void; mcp?: McpManager } = {},
  ) {
    this.#settings = settings;
    this.#mcp = options.mcp;
    this.#mcp?.attach((message) => this.#mcpRequest(message));
    this.#disabled = new Set(settings.disabled);
    this.#factory = options.factory ?? defaultToolHostFactory;
    this.#log = options.log ?? (() => {});
  }

  get root(): string {
    return this.#settings.root;
  }

  /** The tool servers, when a catalog is loaded (GET /mcp, reload). */
  get mcp(): McpManager | undefined {
    return this.#mcp;
  }

  #isBuiltin(name: string): boolean {
    return !this.#disabled.has(name) && BUILTIN_TOOLS.some((tool) => tool.name === name);
  }

  has(name: string): boolean {
    return this.#isBuiltin(name) || this.#mcp?.tool(name) !== undefined;
  }

  classOf(name: string): ToolClass | undefined {
    return this.#isBuiltin(name) ? builtinClass(name) : (this.#mcp?.tool(name)?.toolClass ?? builtinClass(name));
  }

  specs(): ToolSpec[] {
    void this.#mcp?.discover({ retry: true });
    const builtins = builtinSpecs(this.#disabled);
    const taken = new Set(builtins.map((spec) => spec.name));
    return [...builtins, ...(this.#mcp?.specs() ?? []).filter((spec) => !taken.has(spec.name))];
  }

  list(): ToolInfo[] {
    void this.#mcp?.discover({ retry: true });
    const builtins = builtinSpecs(this.#disabled).map(
      (spec): ToolInfo => ({ name: spec.name, description: spec.description, source: "builtin" }),
    );
    const taken = new Set(builtins.map((row) => row.name));
    const servers = (this.#mcp?.tools() ?? [])
      .filter((tool) => !taken.has(tool.name))
      .map(
        (tool): ToolInfo => ({
          name: tool.name,
          description: tool.description,
          source: "mcp",
          server: tool.server,
          readOnly: tool.toolClass === "read-only",
        }),
      );
    return [...builtins, ...servers];
  }

  /**
   * A tool server's call carries `options.meta` as its request's `_meta`; a builtin ignores it.
   * A tool server's call is a `tools/call` client span (tracing on), whose context the worker's
   * request carries.
   */
  run(call: ToolCall, signal: AbortSignal, options: ToolRunOptions = {}): Promise<ToolRunResult> {
    if (this.#closed)
      return Promise.resolve({ output: { error: "not run: the daemon is shutting down" }, isError: true });
    const served = this.#isBuiltin(call.name) ? undefined : this.#mcp?.tool(call.name);
    const params: ToolHostRunParams = served
      ? { call, mcp: { server: served.server, tool: served.tool, ...(options.meta ? { meta: options.meta } : {}) } }
      : { call };
    const send = () => {
      // Runs inside the call's span: the worker's outbound requests carry its context.
      const trace = activeCarrier();
      if (trace !== undefined) params.trace = trace;
      return this.#ensureConnection()
        .request("run", params, { signal, cancelReason: "the turn was cancelled" })
        .catch(unfinished);
    };
    const transport = served ? this.#mcp?.transport(served.server) : undefined;
    return served && transport ? mcpCallSpan({ server: served.server, tool: served.tool, transport }, send) : send();
  }

  /** Shutdown step "tool-server child processes": the worker kills them, then it is terminated. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const connection = this.#connection;
    if (!connection) return;
    const grace = CLOSE_GRACE_MS + (this.#settings.mcp?.timeouts.stopGraceMs ?? 0);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      connection.request("shutdown", {}).catch(() => {}),
      new Promise((resolve) => (timer = setTimeout(resolve, grace))),
    ]);
    clearTimeout(timer);
    connection.close("not finished: the daemon shut down");
    this.#connection = undefined;
  }

  #ensureConnection(): ToolHostConnection {
    if (this.#connection) return this.#connection;
    const mcp = this.#mcp?.workerConfig();
    const connection = RpcConnection.open(
      TOOL_HOST_CHANNEL,
      workerTransport(this.#factory()),
      mcp ? { ...this.#settings, mcp } : this.#settings,
      { onFault: (error) => this.#lost(connection, error) },
    ).onNotification("mcp-state", (params) => this.#mcp?.update(params.servers));
    this.#connection = connection;
    return connection;
  }

  /** The worker is gone: its calls fail (the model reads why) and the next call starts a new one. */
  #lost(connection: ToolHostConnection, error: RpcError): void {
    if (this.#connection !== connection) return;
    const reason =
      error instanceof RpcVersionError
        ? `tool host speaks v${error.peerVersion}, the daemon v${error.localVersion}`
        : error.code === "crashed"
          ? `tool host crashed: ${error.message}`
          : "tool host exited";
    this.#log(reason);
    this.#connection = undefined;
    connection.close(`not finished: ${reason}`);
    this.#mcp?.workerLost();
  }

  /** A tool-server request to the worker (started if needed); answers the servers' states ([] when it was lost). */
  #mcpRequest(
    message:
      | { type: "mcp-configure"; config: NonNullable<ToolHostSettings["mcp"]> }
      | { type: "mcp-discover"; names?: string[] },
  ): Promise<McpServerState[]> {
    if (this.#closed) return Promise.resolve([]);
    const connection = this.#ensureConnection();
    const answer =
      message.type === "mcp-configure"
        ? connection.request("mcp-configure", { config: message.config })
        : connection.request("mcp-discover", message.names === undefined ? {} : { names: message.names });
    return answer.catch(() => []);
  }
}
