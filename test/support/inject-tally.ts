/**
 * The outage tests' inject clients: each sends a steady stream of numbered messages into one
 * session until told to stop, to one daemon or to several in turn, and tallies every answer:
 * accepted (200), refused (a JSON 503, the outage's answer), or wrong (anything else: none may
 * occur). The markers let a test check that every accepted message is in the log exactly once.
 */
import { type Daemon, postJson } from "./daemon.ts";

export interface Tally {
  accepted: string[];
  refused: string[];
  /** Any answer but a 200 or a JSON 503 (a 500, a body that is not {error}): none may occur. */
  wrong: string[];
}

/** One client's injects into `session` until `stop()`, each to the next of `daemons` in turn. */
export async function injectClient(
  daemons: readonly Daemon[],
  session: string,
  stop: () => boolean,
  tally: Tally,
): Promise<void> {
  for (let i = 0; !stop(); i++) {
    const marker = `<${session}-${i}>`;
    const daemon = daemons[i % daemons.length] as Daemon;
    const response = await postJson(`${daemon.baseUrl}/sessions/${session}/inject`, { message: marker });
    const body = await response.text();
    if (response.status === 200) tally.accepted.push(marker);
    else if (response.status === 503 && typeof (JSON.parse(body) as { error?: unknown }).error === "string") {
      tally.refused.push(marker);
      // Pacing, not a wait: a refused client tries again a little later rather than spinning.
      await Bun.sleep(50);
    } else tally.wrong.push(`${daemon.port} ${response.status} ${body}`);
  }
}
