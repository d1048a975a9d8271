/**
 * A throwaway PostgreSQL 15 server for the benches' PostgreSQL columns (D510): initdb in a bench
 * temp directory, the server's defaults for durability (fsync and synchronous_commit on), no TCP
 * listener, only a Unix socket in that directory, reached as
 * `postgres://postgres@/<db>?host=<dir>` (libpq's form, which Bun.sql accepts; D511). Stopped
 * (immediate) and removed when the bench exits, however it exits. As root the server runs as the
 * `postgres` user. Also: whether the PostgreSQL column runs (`--pg=on|off`) and the CPU the
 * server's processes used.
 */
import { chownSync, existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { SQL } from "bun";
import { benchTempDir, cpuSeconds, onExit } from "./lib.ts";

/** Where the PostgreSQL 15 binaries are (`SPAR_BENCH_PG_BIN` overrides). */
export const PG_BIN = process.env.SPAR_BENCH_PG_BIN ?? "/usr/lib/postgresql/15/bin";

/**
 * `--pg=on|off` (D512): default on when the binaries exist; `on` without them is an error (exit 2
 * after saying why), so a run asked for PostgreSQL never silently measures sqlite only.
 */
export function pgColumnWanted(flags: ReadonlyMap<string, string>): boolean {
  const value = flags.get("pg") ?? "auto";
  const present = existsSync(join(PG_BIN, "initdb"));
  if (value === "off") return false;
  if (value === "auto") {
    if (!present) console.error(`PostgreSQL column skipped: no ${join(PG_BIN, "initdb")} (--pg=off to say so)`);
    return present;
  }
  if (value === "on" && present) return true;
  console.error(value === "on" ? `--pg=on: no PostgreSQL binaries in ${PG_BIN}` : `--pg must be on or off`);
  process.exit(2);
}

export interface BenchPostgres {
  /** The socket directory (the URL's host). */
  readonly socketDir: string;
  /** A fresh empty database; resolves to its Unix-socket URL. */
  createDatabase(name: string): Promise<string>;
  /** User+system CPU seconds of the server's processes so far (ended backends included). */
  cpuSeconds(): number;
  /** One line: server version and the settings the numbers depend on. */
  describe(): Promise<string>;
  /** With `statements`: zero pg_stat_statements. */
  resetStatements(): Promise<void>;
  /** With `statements`: the top statements of `database` by server time since the reset, and its COMMITs. */
  statements(database: string, limit: number): Promise<{ commits: number; top: StatementRow[] }>;
  stop(): Promise<void>;
}

export interface StatementRow {
  query: string;
  calls: number;
  totalMs: number;
  rows: number;
}

export interface BenchPostgresOptions {
  /** Load pg_stat_statements (`--pg-statements`: where the server's time goes, per statement). */
  statements?: boolean;
}

function run(argv: string[], asPostgres: boolean): void {
  const full = asPostgres ? ["runuser", "-u", "postgres", "--", ...argv] : argv;
  const result = Bun.spawnSync(full, { stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0)
    throw new Error(`${full.join(" ")} failed (${result.exitCode}): ${result.stderr.toString()}`);
}

/** The Unix-socket URL of `database` on the server whose socket is in `dir` (D511). */
export function socketUrl(dir: string, database: string): string {
  return `postgres://postgres@/${database}?host=${encodeURIComponent(dir)}`;
}

/** CPU of the postmaster (its reaped children in cutime/cstime) plus its live children's. */
function serverCpu(postmaster: number): number {
  const fields = (pid: number) => {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  };
  const own = fields(postmaster);
  let total = (Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14])) / 100;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (Number(fields(Number(entry))[1]) === postmaster) total += cpuSeconds(Number(entry));
    } catch {
      // the process ended between the listing and the read
    }
  }
  return total;
}

/** initdb, start on a Unix socket only; the data and socket live in one bench temp directory. */
export async function startBenchPostgres(options: BenchPostgresOptions = {}): Promise<BenchPostgres> {
  const asPostgres = process.getuid?.() === 0;
  const dir = benchTempDir("spar-bench-pg-");
  if (asPostgres) {
    const ids = (flag: string) => Number(Bun.spawnSync(["id", flag, "postgres"]).stdout.toString().trim());
    chownSync(dir, ids("-u"), ids("-g"));
  }
  const data = join(dir, "data");
  const ctl = (...args: string[]) => run([join(PG_BIN, "pg_ctl"), "-D", data, ...args], asPostgres);
  run([join(PG_BIN, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"], asPostgres);
  let running = true;
  const halt = () => {
    if (!running) return;
    running = false;
    ctl("-m", "immediate", "-w", "stop");
  };
  const preload = options.statements ? " -c shared_preload_libraries=pg_stat_statements" : "";
  ctl("-l", join(dir, "server.log"), "-o", `-k ${dir} -c listen_addresses=''${preload}`, "-w", "start");
  onExit(halt);
  const postmaster = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]);
  const admin = new SQL(socketUrl(dir, "postgres"), { max: 1, connectionTimeout: 10 });
  if (options.statements) await admin`CREATE EXTENSION pg_stat_statements`;
  return {
    socketDir: dir,
    createDatabase: async (name) => {
      await admin.unsafe(`CREATE DATABASE "${name.replace(/"/g, "")}"`);
      return socketUrl(dir, name);
    },
    cpuSeconds: () => serverCpu(postmaster),
    describe: async () => {
      const rows: { v: string; f: string; s: string; b: string }[] = await admin`SELECT
        current_setting('server_version') AS v, current_setting('fsync') AS f,
        current_setting('synchronous_commit') AS s, current_setting('shared_buffers') AS b`;
      const row = rows[0];
      return `PostgreSQL ${row?.v} over a Unix socket, fsync=${row?.f}, synchronous_commit=${row?.s}, shared_buffers=${row?.b}`;
    },
    resetStatements: async () => {
      await admin`SELECT pg_stat_statements_reset()`;
    },
    statements: async (database, limit) => {
      const top: StatementRow[] = await admin`SELECT s.query, s.calls::float8 AS calls,
        s.total_exec_time AS "totalMs", s.rows::float8 AS rows
        FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        WHERE d.datname = ${database} ORDER BY s.total_exec_time DESC LIMIT ${limit}`;
      const committed: { n: number }[] = await admin`SELECT coalesce(sum(s.calls), 0)::float8 AS n
        FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        WHERE d.datname = ${database} AND upper(s.query) = 'COMMIT'`;
      return { commits: committed[0]?.n ?? 0, top };
    },
    stop: async () => {
      await admin.close({ timeout: 0 }).catch(() => {});
      halt();
    },
  };
}
