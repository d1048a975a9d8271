/**
 * The operator CLI's way to a running daemon: Eden's treaty on the main listener's own app type,
 * at `--addr` (default http://127.0.0.1:7777) with `SVC_INJECT_TOKEN` as the bearer when set. A
 * route or body change breaks the CLI's types before it breaks the wire. An unreachable daemon is
 * reported with the address and the fix, never a stack.
 */
import { treaty } from "@elysiajs/eden";
import { redactUrl } from "../../net/redact-url.ts";
import type { MainListenerApp } from "../../svc/listener/main-listener.ts";
import type { FlagSpec } from "../../config/flag-spec.ts";

export const DEFAULT_DAEMON_ADDRESS = "http://127.0.0.1:7777";

/** The `--addr` flag every verb that talks to the daemon takes. */
export const ADDR_FLAG: FlagSpec = {
  name: "addr",
  kind: "string",
  help: "the running daemon's main listener (SVC_INJECT_TOKEN is sent as the bearer when set)",
  defaultValue: DEFAULT_DAEMON_ADDRESS,
};

export function daemonClient(address: string, env: NodeJS.ProcessEnv) {
  const token = env.SVC_INJECT_TOKEN;
  return treaty<MainListenerApp>(address, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
}

export type DaemonClient = ReturnType<typeof daemonClient>;

/** The message for a daemon that could not be reached: the address, the cause and the fix. */
export function unreachableDaemon(address: string, error: unknown): string {
  const cause = error instanceof Error ? error.message : String(error);
  return `no svc daemon answered at ${redactUrl(address)} (${cause}); start one with \`spar svc --listen=...\` or pass --addr=<its main listener URL>`;
}

/** What one call to the daemon came to: its 2xx answer, or the line the verb prints before exit 1. */
export type DaemonAnswer = { ok: true; body: Record<string, unknown> } | { ok: false; message: string };

interface TreatyResult {
  status: number;
  data: unknown;
  error: { status: unknown; value: unknown } | null;
}

/**
 * Run one treaty call to `path` on the daemon at `address`. A connection that fails (Eden reports
 * it as a 503 carrying the fetch error) is the unreachable-daemon message; any other non-2xx is
 * `POST <url>: <status>: <error>` (the refusal line docs/svc-pauses.md opens with).
 */
export async function daemonCall(
  address: string,
  path: string,
  call: () => Promise<TreatyResult>,
): Promise<DaemonAnswer> {
  let result: TreatyResult;
  try {
    result = await call();
  } catch (error) {
    return { ok: false, message: unreachableDaemon(address, error) };
  }
  if (result.error === null) return { ok: true, body: asRecord(result.data) };
  const value = result.error.value;
  if (value instanceof Error) return { ok: false, message: unreachableDaemon(address, value) };
  const body = asRecord(value);
  const text = typeof body.error === "string" ? body.error : JSON.stringify(value);
  return { ok: false, message: `POST ${redactUrl(address.replace(/\/+$/, ""))}${path}: ${result.status}: ${text}` };
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** The daemon's address: `--addr`, else the default. */
export function daemonAddress(values: ReadonlyMap<string, unknown>): string {
  const addr = values.get("addr");
  return typeof addr === "string" && addr !== "" ? addr : DEFAULT_DAEMON_ADDRESS;
}
