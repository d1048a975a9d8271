/**
 * The tool-server catalog `mcp.json` (docs/configuration.md#tool-server-catalog-mcpjson, D23):
 * `version` 1; `servers` a non-empty map of name to an `http` server (`url`, optional
 * `auth.google_oauth.scopes`) or a `stdio` server (`command`, `args`, `env_mode` inherit|clean,
 * `env_passthrough` only under clean, `env`); `${VAR}` and `$VAR` in command, args and env values
 * expanded from the daemon's environment (unset is empty); a non-empty `command_allowlist`
 * (expanded too) must contain every stdio command by literal comparison. Unknown fields are
 * tolerated. Every fatal error names the key. Also `tool_overrides.<tool>.mutating: false` marks
 * one tool read-only (D121), and `no_digest` (boolean, default false): the server's tool results
 * pass through the digest (D388). Pure: the caller reads the file.
 */
import { type Result, err, ok } from "../core/result.ts";

export type EnvMode = "inherit" | "clean";

export interface StdioServer {
  name: string;
  transport: "stdio";
  command: string;
  args: string[];
  envMode: EnvMode;
  envPassthrough: string[];
  env: Record<string, string>;
  /** Tool name -> mutating (false: read-only whatever the server says). */
  overrides: Record<string, boolean>;
  /** `no_digest: true`: large results are never digested (their tool results pass through the digest, D388). Absent: false. */
  noDigest?: true;
}

export interface HttpServer {
  name: string;
  transport: "http";
  url: string;
  /** Present: requests carry an ambient-credential bearer token with these scopes. */
  googleOauthScopes?: string[];
  overrides: Record<string, boolean>;
  /** `no_digest: true`: large results are never digested (their tool results pass through the digest, D388). Absent: false. */
  noDigest?: true;
}

export type ServerConfig = StdioServer | HttpServer;

export interface McpCatalog {
  path: string;
  servers: ServerConfig[];
}

type Env = Readonly<Record<string, string | undefined>>;

/** `${VAR}` and `$VAR` from `env`; unset variables expand to nothing; no escape for a literal `$`. */
export function expandVars(text: string, env: Env): string {
  return text.replace(
    /\$\{([^}]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (_match, braced: string | undefined, bare: string | undefined) => env[braced ?? bare ?? ""] ?? "",
  );
}

class CatalogError extends Error {}

function fail(key: string, message: string): never {
  throw new CatalogError(`${key}: ${message}`);
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function stringList(value: unknown, key: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((item) => typeof item === "string"))
    fail(key, "must be an array of strings");
  return value as string[];
}

function stringMap(value: unknown, key: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) fail(key, "must be a map of strings");
  for (const [name, item] of Object.entries(value))
    if (typeof item !== "string") fail(`${key}.${name}`, "must be a string");
  return value as Record<string, string>;
}

function overrides(value: unknown, key: string): Record<string, boolean> {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) fail(key, "must be a map of tool name to {mutating: bool}");
  const out: Record<string, boolean> = {};
  for (const [tool, entry] of Object.entries(value)) {
    if (
      !isObject(entry) ||
      (entry.mutating !== undefined && entry.mutating !== null && typeof entry.mutating !== "boolean")
    )
      fail(`${key}.${tool}.mutating`, "must be a boolean");
    if (typeof entry.mutating === "boolean") out[tool] = entry.mutating;
  }
  return out;
}

/** `no_digest`: a boolean, default false (absent or null); recorded only when true, so configs without it compare as before. */
function noDigest(value: unknown, key: string): { noDigest?: true } {
  if (value === undefined || value === null) return {};
  if (typeof value !== "boolean") fail(key, `must be a boolean, not ${JSON.stringify(value)}`);
  return value ? { noDigest: true } : {};
}

function httpServer(name: string, raw: Record<string, unknown>, key: string): HttpServer {
  if (raw.url === undefined || raw.url === null || raw.url === "") fail(`${key}.url`, 'required for transport "http"');
  if (typeof raw.url !== "string") fail(`${key}.url`, "must be a string");
  let url: URL;
  try {
    url = new URL(raw.url);
  } catch {
    fail(`${key}.url`, `${JSON.stringify(raw.url)} is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") fail(`${key}.url`, "must be an http or https URL");
  const server: HttpServer = {
    name,
    transport: "http",
    url: url.href,
    overrides: overrides(raw.tool_overrides, `${key}.tool_overrides`),
    ...noDigest(raw.no_digest, `${key}.no_digest`),
  };
  if (raw.auth !== undefined && raw.auth !== null) {
    if (!isObject(raw.auth)) fail(`${key}.auth`, "must be an object");
    const google = raw.auth.google_oauth;
    if (google !== undefined && google !== null) {
      if (!isObject(google)) fail(`${key}.auth.google_oauth`, "must be an object");
      server.googleOauthScopes = stringList(google.scopes, `${key}.auth.google_oauth.scopes`);
    }
  }
  return server;
}

function stdioServer(name: string, raw: Record<string, unknown>, key: string, env: Env): StdioServer {
  if (raw.command === undefined || raw.command === null || raw.command === "")
    fail(`${key}.command`, 'required for transport "stdio"');
  if (typeof raw.command !== "string") fail(`${key}.command`, "must be a string");
  const command = expandVars(raw.command, env);
  if (command.trim() === "") fail(`${key}.command`, `${JSON.stringify(raw.command)} expands to an empty string`);
  const envMode = raw.env_mode ?? "inherit";
  if (envMode !== "inherit" && envMode !== "clean")
    fail(`${key}.env_mode`, `must be "inherit" or "clean", not ${JSON.stringify(envMode)}`);
  const passthrough = stringList(raw.env_passthrough, `${key}.env_passthrough`);
  if (envMode === "inherit" && passthrough.length > 0)
    fail(`${key}.env_passthrough`, 'only allowed with env_mode "clean"');
  const vars = stringMap(raw.env, `${key}.env`);
  return {
    name,
    transport: "stdio",
    command,
    args: stringList(raw.args, `${key}.args`).map((arg) => expandVars(arg, env)),
    envMode,
    envPassthrough: passthrough,
    env: Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, expandVars(v, env)])),
    overrides: overrides(raw.tool_overrides, `${key}.tool_overrides`),
    ...noDigest(raw.no_digest, `${key}.no_digest`),
  };
}

/** `servers.fs`, or `servers."my server"` when the name needs quoting (empty, dots, spaces). */
function serverKey(name: string): string {
  return /^[A-Za-z0-9_-]+$/.test(name) ? `servers.${name}` : `servers.${JSON.stringify(name)}`;
}

function parse(raw: unknown, path: string, env: Env): McpCatalog {
  if (!isObject(raw)) fail("(top level)", "must be a JSON object");
  if (raw.version === undefined) fail("version", "required; must be 1");
  if (raw.version !== 1) fail("version", `must be 1, not ${JSON.stringify(raw.version)}`);
  const allowlist = stringList(raw.command_allowlist, "command_allowlist").map((entry) => expandVars(entry, env));
  if (raw.servers === undefined || raw.servers === null) fail("servers", "required; a map of server name to server");
  if (!isObject(raw.servers)) fail("servers", "must be a map of server name to server");
  const entries = Object.entries(raw.servers);
  if (entries.length === 0) fail("servers", "must not be empty");
  const servers = entries.map(([name, value]): ServerConfig => {
    const key = serverKey(name);
    if (name.trim() === "") fail(key, "a server name must not be empty");
    if (!isObject(value)) fail(key, "must be an object");
    if (value.transport === undefined || value.transport === null)
      fail(`${key}.transport`, 'required: "http" or "stdio"');
    if (value.transport === "http") return httpServer(name, value, key);
    if (value.transport === "stdio") return stdioServer(name, value, key, env);
    return fail(`${key}.transport`, `must be "http" or "stdio", not ${JSON.stringify(value.transport)}`);
  });
  if (allowlist.length > 0) {
    for (const server of servers) {
      if (server.transport === "stdio" && !allowlist.includes(server.command)) {
        fail(`${serverKey(server.name)}.command`, `${JSON.stringify(server.command)} is not in command_allowlist`);
      }
    }
  }
  return { path, servers };
}

/** Parse and validate the file's text; the error names the file and the key. */
export function parseCatalog(text: string, path: string, env: Env): Result<McpCatalog> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return err(`mcp.json ${path}: not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  try {
    return ok(parse(raw, path, env));
  } catch (error) {
    if (error instanceof CatalogError) return err(`mcp.json ${path}: ${error.message}`);
    throw error;
  }
}
