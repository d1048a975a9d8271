/**
 * The tool-host worker's tool servers: one ServerConnection per catalog entry. `configure`
 * applies a (re)loaded catalog: servers whose entry changed or left are stopped, new and changed
 * ones are held unstarted until used. `stopAll` stops every server concurrently (SIGTERM, grace,
 * SIGKILL each).
 */
import type { ServerConfig } from "./catalog.ts";
import { ServerConnection } from "./server-connection.ts";
import type { McpRunResult, McpServerState, McpWorkerConfig } from "./types.ts";

const same = (a: ServerConfig, b: ServerConfig) => JSON.stringify(a) === JSON.stringify(b);

export class ServerPool {
  readonly #servers = new Map<string, ServerConnection>();
  readonly #env: Readonly<Record<string, string | undefined>>;
  readonly #cwd: string;
  readonly #changed: () => void;

  /** `changed`: a server's status moved on its own (started, failed, exited). */
  constructor(env: Readonly<Record<string, string | undefined>>, cwd: string, changed: () => void = () => {}) {
    this.#env = env;
    this.#cwd = cwd;
    this.#changed = changed;
  }

  async configure(config: McpWorkerConfig): Promise<void> {
    const wanted = new Map(config.servers.map((server) => [server.name, server]));
    const stopping: Promise<void>[] = [];
    for (const [name, held] of this.#servers) {
      const next = wanted.get(name);
      if (next === undefined || !same(next, held.config)) {
        this.#servers.delete(name);
        stopping.push(held.stop());
      }
    }
    for (const server of config.servers) {
      if (!this.#servers.has(server.name))
        this.#servers.set(
          server.name,
          new ServerConnection(server, config.timeouts, this.#env, this.#cwd, this.#changed),
        );
    }
    await Promise.all(stopping);
  }

  states(): McpServerState[] {
    return [...this.#servers.values()].map((server) => server.state());
  }

  /** Start (when needed) and list the named servers, or all of them, concurrently. */
  async discover(names?: readonly string[]): Promise<McpServerState[]> {
    const chosen = [...this.#servers.values()].filter(
      (server) => names === undefined || names.includes(server.config.name),
    );
    await Promise.all(chosen.map((server) => server.discover()));
    return this.states();
  }

  /** `meta`: the request's `_meta` (ServerConnection.call). */
  call(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    meta?: Record<string, unknown>,
  ): Promise<McpRunResult> {
    const held = this.#servers.get(server);
    if (!held)
      return Promise.resolve({ output: { error: `tool server ${server} is not in the catalog` }, isError: true });
    return held.call(tool, args, signal, meta);
  }

  async stopAll(): Promise<void> {
    const all = [...this.#servers.values()];
    this.#servers.clear();
    await Promise.all(all.map((server) => server.stop()));
  }
}
