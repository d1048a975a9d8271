/**
 * The session store a svc integration scenario runs on, for each engine (D519): sqlite (a fresh
 * file per daemon started without one, as daemon.ts does) or PostgreSQL (one throwaway cluster per
 * test file, started at the first use and stopped after the file; a fresh database per scenario).
 * A scenario asks the store for its daemons' store flags and reads what a daemon committed through
 * `rows` (a stopped or a running daemon's: neither engine's reader takes the writer lock) and
 * `holds` (whether any stored byte carries a text: a token that must never be stored in clear).
 */
import { afterAll } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { SQL } from "bun";
import type { CommittedRow } from "../../src/core/events.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { DaemonOptions } from "./daemon.ts";
import { type GatedWorkload, gatedDaemonOptions, storedRows } from "./gated-workload.ts";
import { type PostgresCluster, startPostgresCluster } from "./postgres-cluster.ts";

export type SvcEngine = "sqlite" | "postgres";

export interface SvcStore {
  readonly engine: SvcEngine;
  /**
   * The store flags of a daemon: on `sessionDb` (a restart on a store a daemon used), else on a
   * fresh store (sqlite: none given, daemon.ts picks a file; postgres: a new database).
   */
  flags(sessionDb?: string): { sessionDb?: string; args: string[] };
  /** A session's committed rows (`app` svc, or svc.<specialist>). */
  rows(sessionDb: string, app: string, id: string): Promise<CommittedRow[]>;
  /** Whether any byte the store keeps (every file of a sqlite store, every row of a database) holds `text`. */
  holds(sessionDb: string, text: string): Promise<boolean>;
}

export const sqliteSvcStore: SvcStore = {
  engine: "sqlite",
  flags: (sessionDb) => ({ ...(sessionDb === undefined ? {} : { sessionDb }), args: [] }),
  rows: storedRows,
  holds: async (sessionDb, text) => {
    const directory = dirname(sessionDb);
    return readdirSync(directory).some((file) => readFileSync(join(directory, file)).includes(Buffer.from(text)));
  },
};

/** Every row of every table of the public schema, as text. */
async function everyRow(url: string): Promise<string[]> {
  const sql = new SQL(url, { max: 1 });
  try {
    const tables = (await sql`
      SELECT table_name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`) as Array<{ table_name: string }>;
    const texts: string[] = [];
    for (const { table_name } of tables) {
      const rows = (await sql.unsafe(`SELECT t::text AS row FROM "${table_name}" t`)) as Array<{ row: string }>;
      texts.push(...rows.map((entry) => entry.row));
    }
    return texts;
  } finally {
    await sql.close();
  }
}

/**
 * PostgreSQL for one test file: call at the file's top level; the cluster starts when a scenario
 * first asks for a store and stops after the file. `name` prefixes the databases (one per scenario).
 */
export function postgresSvcStore(name: string): SvcStore {
  let cluster: PostgresCluster | undefined;
  let databases = 0;
  afterAll(() => cluster?.stop());
  return {
    engine: "postgres",
    flags: (sessionDb) => {
      const args = ["--session-db-driver=postgres"];
      if (sessionDb !== undefined) return { sessionDb, args };
      cluster ??= startPostgresCluster();
      databases += 1;
      return { sessionDb: cluster.createDatabase(`${name}_${databases}`), args };
    },
    rows: async (url, app, id) => {
      // A reader beside the daemon: it takes no writer lock.
      const store = await PostgresStore.open(url, { writerLock: false });
      try {
        return await store.read({ app, id }, 0, 10_000);
      } finally {
        await store.close();
      }
    },
    // In text, jsonb or bytea (shown as hex): the token's bytes anywhere.
    holds: async (url, text) => {
      const hex = Buffer.from(text).toString("hex");
      return (await everyRow(url)).some((row) => row.includes(text) || row.includes(hex));
    },
  };
}

/** Both engines, for a file that runs its scenarios on each; postgres's databases named after `name`. */
export function svcStores(name: string): SvcStore[] {
  return [sqliteSvcStore, postgresSvcStore(name)];
}

/** gatedDaemonOptions on `store`: `extra.sessionDb` restarts on a store a daemon used, else a fresh one. */
export function gatedOn(
  store: SvcStore,
  workload: GatedWorkload,
  lines: readonly unknown[],
  extra: Parameters<typeof gatedDaemonOptions>[2] = {},
): DaemonOptions {
  const flags = store.flags(extra.sessionDb);
  return gatedDaemonOptions(workload, lines, { ...extra, ...flags, args: [...flags.args, ...(extra.args ?? [])] });
}
