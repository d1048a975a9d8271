/**
 * A `spar agent` with every gate on (its own wiring started in the test process, on a real port), for attack tests: a transport token, multi-session auth
 * with a token table (owner, contributor, viewer, stranger, a proxy and an admin), and the peer
 * hub. `send` presents the transport token and a caller's bearer token unless told otherwise.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../src/surfaces/http/caller-auth.ts";
import { tempDir } from "./daemon.ts";
import { startInProcessAgent } from "./in-process-agent.ts";

export const TRANSPORT_TOKEN = "transport-token";

/** Callers of the token table. `gw` is a proxy identity, `root` an admin; the rest are plain. */
export const CALLER_TOKENS = {
  alice: "tok-alice",
  bob: "tok-bob",
  carol: "tok-carol",
  vic: "tok-vic",
  eve: "tok-eve",
  gw: "tok-gateway",
  root: "tok-root",
} as const;

export type CallerName = keyof typeof CALLER_TOKENS;

export interface TenantRequest {
  method?: string;
  path: string;
  /** The caller whose bearer token is sent; "none" sends no Authorization. Default none. */
  as?: CallerName | "none";
  /** Merged last: an empty X-Attach-Token here replaces the transport token. */
  headers?: Record<string, string>;
  /** JSON-encoded unless `raw` is given. */
  body?: unknown;
  raw?: string | Uint8Array;
  /** Default application/json; null sends none. */
  contentType?: string | null;
  signal?: AbortSignal;
}

export interface TenantDaemon {
  /** The daemon's listener: a real port served from this process (test/support/in-process-agent.ts). */
  readonly daemon: { readonly baseUrl: string; readonly port: number };
  send(request: TenantRequest): Promise<Response>;
  stop(): Promise<void>;
}

/** The flags and files of a fully gated daemon; the token table and config live in a temp dir. */
export function tenantDaemonArgs(): { args: string[]; env: Record<string, string> } {
  const dir = tempDir();
  const callers = Object.entries(CALLER_TOKENS).map(([identity, token]) => ({
    identity,
    token_sha256: sha256Hex(token),
  }));
  writeFileSync(join(dir, "callers.json"), JSON.stringify({ callers }));
  writeFileSync(
    join(dir, "config.json"),
    JSON.stringify({ attach: { multi_session: { auth: { admin_identities: ["root"], proxy_identities: ["gw"] } } } }),
  );
  return {
    args: [
      "--multi-session",
      `--auth-table=${join(dir, "callers.json")}`,
      `--config=${join(dir, "config.json")}`,
      "--attach-token=SPAR_T",
      "--attach-peer-hub",
    ],
    env: { SPAR_T: TRANSPORT_TOKEN },
  };
}

export function tenantHeaders(request: Pick<TenantRequest, "as" | "contentType" | "headers">): Record<string, string> {
  const headers: Record<string, string> = { "x-attach-token": TRANSPORT_TOKEN };
  if (request.as && request.as !== "none") headers.authorization = `Bearer ${CALLER_TOKENS[request.as]}`;
  if (request.contentType !== null) headers["content-type"] = request.contentType ?? "application/json";
  return { ...headers, ...request.headers };
}

export async function startTenantDaemon(extraArgs: string[] = []): Promise<TenantDaemon> {
  const { args, env } = tenantDaemonArgs();
  const agent = await startInProcessAgent({ args: [...args, ...extraArgs], env });
  const daemon = { baseUrl: agent.baseUrl, port: agent.port };
  return {
    daemon,
    send: (request) => {
      const body = request.raw ?? (request.body === undefined ? undefined : JSON.stringify(request.body));
      return fetch(`${daemon.baseUrl}${request.path}`, {
        method: request.method ?? "GET",
        headers: tenantHeaders(request),
        ...(body === undefined ? {} : { body }),
        ...(request.signal ? { signal: request.signal } : {}),
      });
    },
    stop: () => agent.stop(),
  };
}

/** Read a response's body as text, or only its head for an event stream (then hang up). */
export async function drain(response: Response): Promise<string> {
  if (response.headers.get("content-type")?.includes("text/event-stream")) {
    await response.body?.cancel();
    return "";
  }
  return await response.text();
}

/** The `{error}` of a JSON error answer, or a description of what came instead. */
export async function errorOf(response: Response): Promise<string> {
  const type = response.headers.get("content-type") ?? "";
  const text = await drain(response);
  if (!type.includes("application/json")) return `<not JSON: ${type}: ${text.slice(0, 80)}>`;
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    return typeof parsed.error === "string" ? parsed.error : `<no error string: ${text.slice(0, 80)}>`;
  } catch {
    return `<unparseable: ${text.slice(0, 80)}>`;
  }
}

/** One table-driven attack: a request and the status its refusal (or a control's pass) must have. */
export interface AttackCase extends TenantRequest {
  name: string;
  expect: number;
}

/**
 * Send one case; list what is wrong with the answer: another status, a 500, a refusal without a
 * JSON `{error}` body, or a daemon that no longer serves /healthz after it.
 */
export async function caseProblems(tenant: TenantDaemon, attack: AttackCase): Promise<string[]> {
  const response = await tenant.send(attack);
  const problems: string[] = [];
  const error = response.status >= 300 ? await errorOf(response) : (await drain(response), undefined);
  if (response.status !== attack.expect)
    problems.push(`expected ${attack.expect}, got ${response.status}${error ? ` (${error})` : ""}`);
  if (response.status === 500) problems.push("500");
  if (error?.startsWith("<")) problems.push(`refusal without a JSON error body: ${error}`);
  const health = await fetch(`${tenant.daemon.baseUrl}/healthz`);
  await health.arrayBuffer();
  if (health.status !== 200) problems.push(`daemon unhealthy after it (${health.status})`);
  return problems;
}
