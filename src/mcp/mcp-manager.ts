/**
 * The main thread's view of the tool servers: the loaded catalog, each server's last reported
 * state, and the tools they offer under their model-facing names (`<server>__<tool>`, D120) with
 * their classes (D121). The tool host's worker does the work; this side asks it over the
 * channel (`request`). Also the reload entry point for POST /reload (`reload()`); the worker pushes status changes (`update`).
 */
import type { ToolSpec } from "../core/model.ts";
import type { ToolClass } from "../core/permission-policy.ts";
import type { Result } from "../core/result.ts";
import { classifyMcpTool } from "../core/tool-class.ts";
import type { McpCatalog, ServerConfig } from "./catalog.ts";
import type { McpServerState, McpTimeouts, McpWorkerConfig } from "./types.ts";

/** Model tool names allow [A-Za-z0-9_-] and at most 64 characters (the strictest provider). */
export function mcpToolName(server: string, tool: string): string {
  const clean = (text: string) => text.replace(/[^A-Za-z0-9_-]/g, "_");
  return `${clean(server)}__${clean(tool)}`.slice(0, 64);
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

export interface McpTool {
  /** The name the model and the permission gate see. */
  name: string;
  server: string;
  /** The server's own name for it. */
  tool: string;
  description: string;
  inputSchema: Record<string, unknown>;
  toolClass: ToolClass;
}

/** GET /mcp row. */
export interface McpServerRow {
  name: string;
  status: McpServerState["status"];
  transport: "stdio" | "http";
  error?: string;
  /** A stdio server's process id while it runs. */
  pid?: number;
  tools?: Array<{ name: string; description?: string }>;
}

export interface McpReloadResult {
  /** Servers in the catalog after the reload. */
  servers: string[];
  added: string[];
  removed: string[];
  changed: string[];
  /** Non-empty: the file was refused and the previous catalog stays in force. */
  errors: string[];
}

export type McpRequest = (
  message: { type: "mcp-configure"; config: McpWorkerConfig } | { type: "mcp-discover"; names?: string[] },
) => Promise<McpServerState[]>;

export class McpManager {
  #catalog: McpCatalog;
  readonly #timeouts: McpTimeouts;
  readonly #load: () => Result<McpCatalog | undefined>;
  #request: McpRequest | undefined;
  #states = new Map<string, McpServerState>();
  #tools = new Map<string, McpTool>();
  #discovering: Promise<void> | undefined;
  /** Server name -> when its last start attempt began (retries wait `retryMs`). */
  readonly #attempted = new Map<string, number>();

  constructor(catalog: McpCatalog, timeouts: McpTimeouts, load: () => Result<McpCatalog | undefined>) {
    this.#catalog = catalog;
    this.#timeouts = timeouts;
    this.#load = load;
    this.#setStates(
      catalog.servers.map((server) => ({ name: server.name, transport: server.transport, status: "idle" })),
    );
  }

  /** Wired by the tool host: how requests reach its worker. */
  attach(request: McpRequest): void {
    this.#request = request;
  }

  get path(): string {
    return this.#catalog.path;
  }

  workerConfig(): McpWorkerConfig {
    return { servers: this.#catalog.servers, timeouts: this.#timeouts };
  }

  /**
   * Start and list every server whose tools are not known yet (concurrently; failures show on
   * /mcp). With `retry`, a server whose last attempt began less than `retryMs` ago is left alone:
   * the tool host calls this on every turn and /tools read, so a server that was down at startup
   * joins once it is reachable.
   */
  discover(options: { retry?: boolean } = {}): Promise<void> {
    if (this.#discovering) return this.#discovering;
    const now = Date.now();
    const names = this.#catalog.servers
      .filter((server) => this.#states.get(server.name)?.tools === undefined)
      .filter((server) => !options.retry || now - (this.#attempted.get(server.name) ?? 0) >= this.#timeouts.retryMs)
      .map((server) => server.name);
    if (names.length === 0 || !this.#request) return Promise.resolve();
    for (const name of names) this.#attempted.set(name, now);
    this.#discovering = this.#request({ type: "mcp-discover", names })
      .then((states) => this.#setStates(states))
      .finally(() => (this.#discovering = undefined));
    return this.#discovering;
  }

  /** Re-read the catalog file: on success apply it (changed and removed servers stop, new ones start), else keep the old one. */
  async reload(): Promise<McpReloadResult> {
    const loaded = this.#load();
    const before = new Map(this.#catalog.servers.map((server) => [server.name, server]));
    if (!loaded.ok) return { servers: [...before.keys()], added: [], removed: [], changed: [], errors: [loaded.error] };
    const next: McpCatalog = loaded.value ?? { path: this.#catalog.path, servers: [] };
    const after = new Map(next.servers.map((server) => [server.name, server]));
    const same = (a: ServerConfig, b: ServerConfig) => JSON.stringify(a) === JSON.stringify(b);
    const added = [...after.keys()].filter((name) => !before.has(name));
    const removed = [...before.keys()].filter((name) => !after.has(name));
    const changed = [...after.keys()].filter(
      (name) => before.has(name) && !same(before.get(name) as ServerConfig, after.get(name) as ServerConfig),
    );
    this.#catalog = next;
    // Changed and removed servers forget what they listed; the worker stops them.
    for (const name of [...removed, ...changed]) this.#states.delete(name);
    this.#setStates([...this.#states.values()]);
    const errors: string[] = [];
    if (this.#request) {
      try {
        this.#setStates(await this.#request({ type: "mcp-configure", config: this.workerConfig() }));
      } catch (error) {
        errors.push(`applying ${next.path}: ${error instanceof Error ? error.message : String(error)}`);
      }
      // A listing already in flight knew the old catalog: let it finish, then list the new servers.
      await this.#discovering;
      await this.discover();
      for (const name of [...added, ...changed]) {
        const state = this.#states.get(name);
        if (state?.status === "failed") errors.push(`tool server ${name}: ${state.error ?? "failed to start"}`);
      }
    }
    return { servers: next.servers.map((server) => server.name), added, removed, changed, errors };
  }

  /** The worker went away: its stdio children (own process groups) are killed here; servers start again on next use. */
  workerLost(): void {
    for (const state of this.#states.values()) if (state.pid !== undefined) killGroup(state.pid);
    this.#setStates(
      [...this.#states.values()].map((state): McpServerState => {
        const { pid: _gone, ...rest } = state;
        return { ...rest, status: state.status === "stopped" ? "stopped" : "idle" };
      }),
    );
  }

  /** The worker reports servers' states on its own (a server failed or exited). */
  update(states: readonly McpServerState[]): void {
    this.#setStates(states);
  }

  rows(): McpServerRow[] {
    return this.#catalog.servers.map((server) => {
      const state = this.#states.get(server.name);
      const row: McpServerRow = { name: server.name, status: state?.status ?? "idle", transport: server.transport };
      if (state?.error !== undefined && state.status !== "ready") row.error = state.error;
      if (state?.pid !== undefined && state.status === "ready") row.pid = state.pid;
      if (state?.tools)
        row.tools = state.tools.map((tool) =>
          tool.description ? { name: tool.name, description: tool.description } : { name: tool.name },
        );
      return row;
    });
  }

  /** How the catalog reaches `server` (undefined: not in the catalog). */
  transport(server: string): "stdio" | "http" | undefined {
    return this.#catalog.servers.find((candidate) => candidate.name === server)?.transport;
  }

  tool(name: string): McpTool | undefined {
    return this.#tools.get(name);
  }

  tools(): McpTool[] {
    return [...this.#tools.values()];
  }

  specs(): ToolSpec[] {
    return this.tools().map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema,
    }));
  }

  #setStates(states: readonly McpServerState[]): void {
    const wanted = new Set(this.#catalog.servers.map((server) => server.name));
    const next = new Map<string, McpServerState>();
    for (const state of states) {
      if (!wanted.has(state.name)) continue;
      const tools = state.tools ?? this.#states.get(state.name)?.tools;
      next.set(state.name, tools ? { ...state, tools } : state);
    }
    for (const server of this.#catalog.servers)
      if (!next.has(server.name))
        next.set(
          server.name,
          this.#states.get(server.name) ?? { name: server.name, transport: server.transport, status: "idle" },
        );
    this.#states = next;
    const tools = new Map<string, McpTool>();
    for (const server of this.#catalog.servers) {
      for (const tool of next.get(server.name)?.tools ?? []) {
        const name = mcpToolName(server.name, tool.name);
        if (tools.has(name)) continue;
        tools.set(name, {
          name,
          server: server.name,
          tool: tool.name,
          description: tool.description,
          inputSchema: tool.inputSchema,
          toolClass: classifyMcpTool(tool, server.overrides[tool.name]),
        });
      }
    }
    this.#tools = tools;
  }
}
