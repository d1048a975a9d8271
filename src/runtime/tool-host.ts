/**
 * ToolHost: the main thread's side of the tool-host worker (ARCHITECTURE "Tool host worker").
 * Approved calls go to the worker, which runs them and owns their child processes, so a slow or
 * hung tool never blocks the HTTP loop. A call's abort signal (turn cancel) is forwarded as a
 * cancel; a worker that dies fails its calls and is started again on the next call. Also the
 * read model of what tools exist: the builtin specs the model is offered and GET /tools rows.
 *
 * Tool servers: with an McpManager, the servers' tools join `list()` / `specs()` (source `mcp`,
 * `server` set) and their classes join `classOf()`; their calls run in the same worker, which
 * holds the MCP clients and stdio children (src/mcp/).
 */
import type { ToolCall } from "../core/events.ts";
import type { ToolSpec } from "../core/model.ts";
import type { ToolClass } from "../core/permission-policy.ts";
import type { McpManager } from "../mcp/mcp-manager.ts";
import type { McpServerState } from "../mcp/types.ts";
import { BUILTIN_TOOLS, builtinClass, builtinSpecs } from "../tools/builtin-tools.ts";
import type { ToolRunResult } from "./channel.ts";
import {
  type FromToolHost,
  TOOL_HOST_VERSION,
  type ToToolHost,
  type ToolHostSettings,
  isFromToolHost,
} from "./tool-host-channel.ts";
import { workerUrl } from "./worker-urls.ts";

/** Runs approved calls (the permission gate's executor). */
export interface ToolRunner {
  /** A tool by this name exists and is enabled. */
  has(name: string): boolean;
  /** The tool's class for the permission gate, when the tool declares one. */
  classOf(name: string): ToolClass | undefined;
  run(call: ToolCall, signal: AbortSignal): Promise<ToolRunResult>;
}

/** GET /tools row. */
export interface ToolInfo {
  name: string;
  description: string;
  source: "builtin" | "mcp" | "skill" | "subagent" | "other";
  server?: string;
  /** MCP tools: the permission gate's class (readOnlyHint or the catalog override). */
  read_only?: boolean;
}

/** The tools a session has: what the model is offered and what GET /tools lists. */
export interface ToolCatalog {
  specs(): ToolSpec[];
  list(): ToolInfo[];
}

export type ToolHostFactory = () => Worker;

export const defaultToolHostFactory: ToolHostFactory = () => new Worker(workerUrl("tool-host"));

/** How long shutdown waits for the worker to kill its children (beyond the tool servers' grace) before terminating it. */
const CLOSE_GRACE_MS = 3000;

interface Pending {
  resolve(result: ToolRunResult): void;
}

export class ToolHost implements ToolRunner, ToolCatalog {
  readonly #settings: ToolHostSettings;
  readonly #disabled: ReadonlySet<string>;
  readonly #factory: ToolHostFactory;
  readonly #log: (message: string) => void;
  readonly #pending = new Map<number, Pending>();
  readonly #mcpPending = new Map<number, (servers: McpServerState[]) => void>();
  readonly #mcp: McpManager | undefined;
  #worker: Worker | undefined;
  #nextId = 1;
  #closed = false;
  #onClosed: (() => void) | undefined;

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
          read_only: tool.toolClass === "read-only",
        }),
      );
    return [...builtins, ...servers];
  }

  run(call: ToolCall, signal: AbortSignal): Promise<ToolRunResult> {
    if (this.#closed)
      return Promise.resolve({ output: { error: "not run: the daemon is shutting down" }, isError: true });
    const worker = this.#ensureWorker();
    const id = this.#nextId++;
    return new Promise<ToolRunResult>((resolve) => {
      const onAbort = () => this.#send(worker, { type: "cancel", id });
      this.#pending.set(id, {
        resolve: (result) => {
          signal.removeEventListener("abort", onAbort);
          resolve(result);
        },
      });
      const served = this.#isBuiltin(call.name) ? undefined : this.#mcp?.tool(call.name);
      this.#send(
        worker,
        served
          ? { type: "run", id, call, mcp: { server: served.server, tool: served.tool } }
          : { type: "run", id, call },
      );
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Shutdown step "tool-server child processes": the worker kills them, then it is terminated. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const worker = this.#worker;
    if (!worker) return;
    const closed = new Promise<void>((resolve) => (this.#onClosed = resolve));
    this.#send(worker, { type: "shutdown" });
    const grace = CLOSE_GRACE_MS + (this.#settings.mcp?.timeouts.stopGraceMs ?? 0);
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, grace))]);
    this.#failAll("not finished: the daemon shut down");
    worker.terminate();
    this.#worker = undefined;
  }

  #ensureWorker(): Worker {
    if (this.#worker) return this.#worker;
    const worker = this.#factory();
    worker.onmessage = (event: MessageEvent) => this.#onMessage(worker, event.data);
    worker.onerror = (event: ErrorEvent) => this.#lost(worker, `tool host crashed: ${event.message}`);
    const mcp = this.#mcp?.workerConfig();
    this.#send(worker, {
      type: "hello",
      version: TOOL_HOST_VERSION,
      settings: mcp ? { ...this.#settings, mcp } : this.#settings,
    });
    this.#worker = worker;
    return worker;
  }

  #send(worker: Worker, message: ToToolHost): void {
    worker.postMessage(message);
  }

  #onMessage(worker: Worker, message: unknown): void {
    if (!isFromToolHost(message)) return;
    const data: FromToolHost = message;
    switch (data.type) {
      case "ready":
        if (data.version !== TOOL_HOST_VERSION)
          this.#lost(worker, `tool host speaks v${data.version}, the daemon v${TOOL_HOST_VERSION}`);
        return;
      case "result": {
        const pending = this.#pending.get(data.id);
        this.#pending.delete(data.id);
        pending?.resolve(data.result);
        return;
      }
      case "mcp-state": {
        const waiting = this.#mcpPending.get(data.id);
        this.#mcpPending.delete(data.id);
        if (waiting) waiting(data.servers);
        else if (data.id === 0) this.#mcp?.update(data.servers);
        return;
      }
      case "closed":
        this.#onClosed?.();
        return;
    }
  }

  /** The worker is gone: its calls fail (the model reads why) and the next call starts a new one. */
  #lost(worker: Worker, reason: string): void {
    if (this.#worker !== worker) return;
    this.#log(reason);
    this.#worker = undefined;
    worker.terminate();
    this.#failAll(`not finished: ${reason}`);
    this.#mcp?.workerLost();
  }

  /** A tool-server request to the worker (started if needed); answers the servers' states. */
  #mcpRequest(
    message:
      | { type: "mcp-configure"; config: NonNullable<ToolHostSettings["mcp"]> }
      | { type: "mcp-discover"; names?: string[] },
  ): Promise<McpServerState[]> {
    if (this.#closed) return Promise.resolve([]);
    const worker = this.#ensureWorker();
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#mcpPending.set(id, resolve);
      this.#send(worker, { ...message, id });
    });
  }

  #failAll(reason: string): void {
    for (const [id, waiting] of this.#mcpPending) {
      this.#mcpPending.delete(id);
      waiting([]);
    }
    for (const [id, pending] of this.#pending) {
      this.#pending.delete(id);
      pending.resolve({ output: { error: reason }, isError: true });
    }
  }
}
