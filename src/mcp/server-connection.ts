/**
 * One tool server as the tool-host worker holds it: an MCP `Client` over stdio (a child process
 * in its own group) or streamable HTTP, connected on first use and kept until stop. A start that
 * does not finish within the start timeout fails (the child is killed); a stdio server that exits
 * fails its in-flight calls and is started again on the next use. Calls are bounded by the call
 * timeout and cancelled by the turn's signal, and carry the caller's metadata as `_meta`.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { ServerConfig, StdioServer } from "./catalog.ts";
import { type TokenSource, googleTokenSource } from "./google-credentials.ts";
import { serverFetch } from "./http-fetch.ts";
import { BunStdioTransport } from "./stdio-transport.ts";
import { type McpRunResult, type McpServerState, type McpTimeouts, type McpToolInfo, SPAR_CLIENT } from "./types.ts";

export function stdioEnvironment(
  server: StdioServer,
  base: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  if (server.envMode === "inherit") {
    for (const [key, value] of Object.entries(base)) if (value !== undefined) out[key] = value;
  } else {
    for (const key of ["PATH", ...server.envPassthrough]) if (base[key] !== undefined) out[key] = base[key] as string;
  }
  return { ...out, ...server.env };
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

export class ServerConnection {
  readonly config: ServerConfig;
  readonly #timeouts: McpTimeouts;
  readonly #env: Readonly<Record<string, string | undefined>>;
  readonly #cwd: string;
  #client: Client | undefined;
  #transport: Transport | undefined;
  #connecting: Promise<Client> | undefined;
  #status: McpServerState["status"] = "idle";
  #error: string | undefined;
  #tools: McpToolInfo[] | undefined;
  #stopped = false;
  /** `auth.google_oauth` servers: made on first connect, kept across reconnects. */
  #token: TokenSource | undefined;
  readonly #changed: () => void;

  constructor(
    config: ServerConfig,
    timeouts: McpTimeouts,
    env: Readonly<Record<string, string | undefined>>,
    cwd: string,
    changed: () => void = () => {},
  ) {
    this.config = config;
    this.#changed = changed;
    this.#timeouts = timeouts;
    this.#env = env;
    this.#cwd = cwd;
  }

  #set(status: McpServerState["status"]): void {
    if (this.#status === status) return;
    this.#status = status;
    this.#changed();
  }

  state(): McpServerState {
    const base: McpServerState = { name: this.config.name, transport: this.config.transport, status: this.#status };
    if (this.#error !== undefined) base.error = this.#error;
    if (this.#tools !== undefined) base.tools = this.#tools;
    const pid = this.#transport instanceof BunStdioTransport ? this.#transport.pid : undefined;
    if (pid !== undefined) base.pid = pid;
    return base;
  }

  /** Connect if needed; the first connection lists the tools (kept for the server's life). */
  async discover(): Promise<McpServerState> {
    try {
      await this.#connect();
    } catch (error) {
      this.#error = message(error);
    }
    return this.state();
  }

  async #listTools(client: Client): Promise<void> {
    const listed = await client.listTools(undefined, { timeout: this.#timeouts.startMs });
    this.#tools = listed.tools.map((tool) => {
      const info: McpToolInfo = {
        name: tool.name,
        description: tool.description ?? tool.annotations?.title ?? tool.title ?? "",
        inputSchema: tool.inputSchema as Record<string, unknown>,
      };
      if (tool.annotations?.readOnlyHint !== undefined) info.readOnlyHint = tool.annotations.readOnlyHint;
      if (tool.annotations?.destructiveHint !== undefined) info.destructiveHint = tool.annotations.destructiveHint;
      return info;
    });
  }

  /**
   * `meta` goes out as the `tools/call` request's `params._meta` (the SDK merges its own keys,
   * such as a progress token, into it), so a server can deduplicate on a key the caller chose.
   */
  async call(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    meta?: Record<string, unknown>,
  ): Promise<McpRunResult> {
    let client: Client;
    try {
      client = await this.#connect();
    } catch (error) {
      return {
        output: { error: `tool server ${this.config.name} is not available: ${message(error)}` },
        isError: true,
      };
    }
    try {
      const params = meta ? { name: tool, arguments: args, _meta: meta } : { name: tool, arguments: args };
      const result = await client.callTool(params, undefined, {
        signal,
        timeout: this.#timeouts.callMs,
      });
      return toRunResult(result as Record<string, unknown>);
    } catch (error) {
      if (signal.aborted) return { output: { error: `cancelled: ${message(signal.reason)}` }, isError: true };
      return { output: { error: `tool server ${this.config.name}: ${message(error)}` }, isError: true };
    }
  }

  /** Stop for good (shutdown, or the server left the catalog): SIGTERM, grace, SIGKILL for stdio. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#set("stopped");
    await this.#dropTransport();
  }

  #connect(): Promise<Client> {
    if (this.#client) return Promise.resolve(this.#client);
    if (this.#stopped) return Promise.reject(new Error("stopped"));
    this.#connecting ??= this.#open().finally(() => (this.#connecting = undefined));
    return this.#connecting;
  }

  async #open(): Promise<Client> {
    this.#set("starting");
    this.#error = undefined;
    const transport = this.#newTransport();
    this.#transport = transport;
    const client = new Client(SPAR_CLIENT, { capabilities: {} });
    client.onclose = () => {
      if (this.#client !== client) return;
      this.#client = undefined;
      this.#transport = undefined;
      if (!this.#stopped) {
        this.#set("failed");
        this.#error ??= "the server closed the connection";
      }
    };
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`did not start within ${this.#timeouts.startMs / 1000} s`)),
        this.#timeouts.startMs,
      );
    });
    try {
      await Promise.race([
        (async () => {
          await client.connect(transport, { timeout: this.#timeouts.startMs });
          if (this.#tools === undefined) await this.#listTools(client);
        })(),
        timedOut,
      ]);
    } catch (error) {
      const stderr =
        transport instanceof BunStdioTransport && transport.stderr ? ` (stderr: ${transport.stderr.slice(-500)})` : "";
      this.#set("failed");
      this.#error = `${message(error)}${stderr}`;
      await this.#dropTransport(transport);
      if (!this.#stopped) this.#set("failed");
      throw new Error(this.#error);
    } finally {
      clearTimeout(timer);
    }
    if (this.#stopped) {
      await this.#dropTransport(transport);
      throw new Error("stopped");
    }
    this.#client = client;
    this.#set("ready");
    return client;
  }

  #newTransport(): Transport {
    const config = this.config;
    if (config.transport === "stdio") {
      const transport = new BunStdioTransport({
        command: config.command,
        args: config.args,
        env: stdioEnvironment(config, this.#env),
        cwd: this.#cwd,
      });
      transport.onerror = (error) => (this.#error = message(error));
      return transport;
    }
    // One token source for the server's life: a reconnect reuses the library's cached token.
    if (config.googleOauthScopes !== undefined) this.#token ??= googleTokenSource(config.googleOauthScopes);
    return new StreamableHTTPClientTransport(new URL(config.url), { fetch: serverFetch(this.#token) });
  }

  async #dropTransport(transport: Transport | undefined = this.#transport): Promise<void> {
    if (transport === undefined) return;
    if (this.#transport === transport) {
      this.#transport = undefined;
      this.#client = undefined;
    }
    try {
      if (transport instanceof BunStdioTransport) await transport.stop(this.#timeouts.stopGraceMs);
      else
        await Promise.race([
          transport.close(),
          new Promise((resolve) => setTimeout(resolve, this.#timeouts.stopGraceMs)),
        ]);
    } catch {
      // already gone
    }
  }
}

/** MCP CallToolResult -> the tool row the model reads: text joined, other blocks kept as they are. */
export function toRunResult(result: Record<string, unknown>): McpRunResult {
  const blocks = Array.isArray(result.content) ? (result.content as Array<Record<string, unknown>>) : [];
  const text = blocks
    .filter((block) => block.type === "text" && typeof block.text === "string")
    .map((block) => block.text as string)
    .join("\n");
  const others = blocks.filter((block) => block.type !== "text");
  const isError = result.isError === true;
  const output: Record<string, unknown> = isError ? { error: text || "the tool reported an error" } : { content: text };
  if (others.length > 0) output.blocks = others;
  if (result.structuredContent !== undefined) output.structured = result.structuredContent;
  return { output, isError };
}
