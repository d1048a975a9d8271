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
