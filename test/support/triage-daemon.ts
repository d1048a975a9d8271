/**
 * The `spar agent` the watcher's end-to-end tests inject into: multi-session with a token table
 * where `watcher` is a proxy that asserts the on-call owner, and a reader of what was injected
 * into a session (agent rows whose text is an incident payload), read as that owner.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../src/surfaces/http/caller-auth.ts";
import { type Daemon, startDaemon, waitFor } from "./daemon.ts";
import { collect } from "./sse-client.ts";

export const OWNER = "oncall@example.com";
export const ONCALL_TOKEN = "tok-oncall";
/** The watcher's environment: its bearer token for the daemon. */
export const WATCHER_ENV = { WATCHER_TOKEN: "tok-watcher" };

export async function startTriageDaemon(dir: string): Promise<Daemon> {
  const table = join(dir, "callers.yaml");
  writeFileSync(table, ["callers:", "  - identity: watcher", "    token_env: WATCHER_TOKEN", `  - identity: ${OWNER}`, `    token_sha256: ${sha256Hex(ONCALL_TOKEN)}`, ""].join("\n"));
  writeFileSync(join(dir, "config.json"), JSON.stringify({ attach: { multi_session: { auth: { proxy_identities: ["watcher"] } } } }));
  return startDaemon({ args: ["--multi-session", `--auth-table=${table}`, `--config=${join(dir, "config.json")}`], env: WATCHER_ENV });
}

/** The payloads injected into a session once at least `count` distinct ones arrived. */
export async function injectedPayloads(daemon: Daemon, sessionId: string, count: number): Promise<Array<Record<string, unknown>>> {
  const stream = collect(`${daemon.baseUrl}/sessions/${sessionId}/events?since=0`, { headers: { authorization: `Bearer ${ONCALL_TOKEN}` } });
  const texts = () =>
    stream.frames
      .filter((frame) => frame.event === "agent")
      .map((frame) => ((frame.data.event as { Content?: { parts?: Array<{ text?: string }> } }).Content?.parts ?? []).map((part) => part.text ?? "").join(""))
      .filter((text) => text.startsWith('{"kind"'));
  try {
    await waitFor(() => (new Set(texts()).size >= count ? true : undefined), 15_000, `${count} injects in ${sessionId}`);
    return [...new Set(texts())].map((text) => JSON.parse(text) as Record<string, unknown>);
  } finally {
    stream.close();
  }
}
