/**
 * A real, throwaway PostgreSQL 15 cluster for a test file: initdb in a temp directory, pg_ctl
 * start on a free 127.0.0.1 port with its socket in that directory, one database created, and
 * stopped (immediate) and removed by `stop()`. As root (here and in CI) the cluster runs as the
 * `postgres` user via runuser; as anyone else, as that user. Trust authentication, local only; with
 * `password`, scram-sha-256 instead: every login (the tests' and the daemons') must give it. With
 * `ssl`, the server speaks TLS with a certificate for 127.0.0.1/localhost signed by a throwaway CA
 * (`caFile`); `ssl: "required"` also refuses every TCP login without TLS (hostssl only in pg_hba.conf).
 */
import {
  chmodSync,
  chownSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TestCertificates } from "./test-certificates.ts";

const BIN = process.env.SPAR_TEST_PG_BIN ?? "/usr/lib/postgresql/15/bin";

export interface PostgresCluster {
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  readonly url: string;
  readonly port: number;
  /** With `ssl`: the PEM file of the CA that signed the server's certificate. */
  readonly caFile?: string;
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
  /** TLS on (clients choose), or required of every TCP login (hostssl only). */
  ssl?: "on" | "required";
}

/**
 * The server's TLS settings: a CA and a server certificate made in `dir`/certs, the server's copy of
 * its key owned by the server's user (mode 0600, as PostgreSQL insists); with "required", pg_hba.conf's
 * TCP lines become hostssl. Answers the postgres -c options and the CA's file.
 */
function serverTls(dir: string, data: string, ssl: "on" | "required", asPostgres: boolean) {
  const certs = join(dir, "certs");
  mkdirSync(certs);
  new TestCertificates(certs).ca("ca", "/CN=spar-test-pg-ca").signed("server", "/CN=127.0.0.1", "ca", { server: true });
  for (const file of ["server.crt", "server.key"]) {
    copyFileSync(join(certs, file), join(data, file));
    chmodSync(join(data, file), 0o600);
    if (asPostgres) {
      const { uid, gid } = postgresIds();
      chownSync(join(data, file), uid, gid);
    }
  }
  if (ssl === "required") {
    const hba = join(data, "pg_hba.conf");
    writeFileSync(hba, readFileSync(hba, "utf8").replace(/^host(\s)/gm, "hostssl$1"));
  }
  return { options: " -c ssl=on", caFile: join(certs, "ca.crt") };
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
    const tls = settings.ssl === undefined ? undefined : serverTls(dir, data, settings.ssl, asPostgres);
    const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off${tls?.options ?? ""}`;
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
    return { url, port, createDatabase, pause, resume, stop, ...(tls ? { caFile: tls.caFile } : {}) };
  } catch (error) {
    stop();
    throw error;
  }
}
