/**
 * The parts the tests of several `spar agent` daemons on one PostgreSQL database share: start an
 * agent on the database (multi-session, a lease of the test's choosing, optionally a scripted
 * model that re-drives quickly) and read a session's committed rows beside the daemons, as a
 * reader that takes no writer lock.
 */
import type { CommittedRow } from "../../src/core/events.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { DaemonScope } from "./daemon-scope.ts";
import type { Daemon } from "./daemon.ts";
import { writeScript } from "./scripted.ts";

export interface ReplicaOptions {
  /** `--session-db-lease` (default 3s: the takeover tests wait on it). */
  lease?: string;
  /** A scripted model's lines; absent: the echo model. */
  script?: readonly unknown[];
  extra?: readonly string[];
}

/** One agent on the shared database `url`, stopped at the scope's end. */
export function startReplica(scope: DaemonScope, url: string, options: ReplicaOptions = {}): Promise<Daemon> {
  const scripted =
    options.script === undefined
      ? []
      : ["--model=scripted", `--script=${writeScript(options.script)}`, "--auto-continue-backoff=50ms"];
  return scope.start({
    sessionDb: url,
    args: [
      "--session-db-driver=postgres",
      "--multi-session",
      `--session-db-lease=${options.lease ?? "3s"}`,
      ...scripted,
      ...(options.extra ?? []),
    ],
  });
}

/** The session's committed rows, read beside the daemons. */
export async function storedRows(url: string, id: string, app = "spar"): Promise<CommittedRow[]> {
  const store = await PostgresStore.open(url, { writerLock: false });
  try {
    return await store.read({ app, id }, 0, 100_000);
  } finally {
    await store.close();
  }
}
