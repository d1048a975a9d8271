/**
 * A real, throwaway PostgreSQL 15 cluster for a test file: initdb in a temp directory, pg_ctl
 * start on a free 127.0.0.1 port with its socket in that directory, one database created, and
 * stopped (immediate) and removed by `stop()`. As root (here and in CI) the cluster runs as the
 * `postgres` user via runuser; as anyone else, as that user. Trust authentication, local only; with
 * `password`, scram-sha-256 instead: every login (the tests' and the daemons') must give it.
 */
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const BIN = process.env.SPAR_TEST_PG_BIN ?? "/usr/lib/postgresql/15/bin";

export interface PostgresCluster {
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  readonly url: string;
  readonly port: number;
  /** A further empty database on the same cluster; resolves to its URL. */
  createDatabase(name: string): string;
  /** Stop the server (fast shutdown: clients are disconnected), keeping its data. */
  pause(): void;
  /** Start it again on the same port. */
  resume(): void;
  stop(): void;
}

function run(argv: string[], asPostgres: boolean, env?: Record<string, string>): void {
  const full = asPostgres ? ["runuser", "-u", "postgres", "--", ...argv] : argv;
  const result = Bun.spawnSync(full, { stdout: "pipe", stderr: "pipe", env: { ...process.env, ...env } });
  if (result.exitCode !== 0)
    throw new Error(
      `${full.join(" ")} failed (${result.exitCode}): ${result.stderr.toString()}${result.stdout.toString()}`,
    );
}

function freePort(): number {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  return port;
}

function postgresIds(): { uid: number; gid: number } {
  const out = Bun.spawnSync(["id", "-u", "postgres"]).stdout.toString().trim();
  const gid = Bun.spawnSync(["id", "-g", "postgres"]).stdout.toString().trim();
  return { uid: Number(out), gid: Number(gid) };
}

export interface PostgresClusterOptions {
  /** The `postgres` user's password, required at every login (scram-sha-256); absent: trust, none. */
  password?: string;
}

/** initdb's authentication flags: trust, or scram-sha-256 with the password in a file the server's user reads. */
function authentication(dir: string, password: string | undefined, asPostgres: boolean): string[] {
  if (password === undefined) return ["-A", "trust"];
  const file = join(dir, "password");
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  if (asPostgres) {
    const { uid, gid } = postgresIds();
    chownSync(file, uid, gid);
  }
  return ["-A", "scram-sha-256", `--pwfile=${file}`];
}

/** Starts a cluster with database `spar`; call stop() in afterAll. */
export function startPostgresCluster(database = "spar", settings: PostgresClusterOptions = {}): PostgresCluster {
  const asPostgres = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), "spar-pg-"));
  chmodSync(dir, 0o700);
  if (asPostgres) {
    const { uid, gid } = postgresIds();
    chownSync(dir, uid, gid);
  }
  const data = join(dir, "data");
  const port = freePort();
  const ctl = (...args: string[]) => run([join(BIN, "pg_ctl"), "-D", data, ...args], asPostgres);
  let started = false;
  const stop = () => {
    if (started) {
      started = false;
      try {
        ctl("-m", "immediate", "-w", "stop");
      } catch {
        // Already gone; the directory goes anyway.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    run(
      [
        join(BIN, "initdb"),
        "-D",
        data,
        ...authentication(dir, settings.password, asPostgres),
        "-U",
        "postgres",
        "-E",
        "UTF8",
        "--no-sync",
      ],
      asPostgres,
    );
    const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    const start = () => ctl("-l", join(dir, "server.log"), "-o", options, "-w", "start");
    start();
    started = true;
    const pause = () => ctl("-m", "fast", "-w", "stop");
    const resume = () => start();
    const createDatabase = (name: string) => {
      const env = settings.password === undefined ? undefined : { PGPASSWORD: settings.password };
      run([join(BIN, "createdb"), "-h", "127.0.0.1", "-p", String(port), "-U", "postgres", name], false, env);
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    };
    const url = createDatabase(database);
    return { url, port, createDatabase, pause, resume, stop };
  } catch (error) {
    stop();
    throw error;
  }
}
