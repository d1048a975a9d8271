/**
 * `spar agent` on a PostgreSQL 15 that requires TLS of every TCP login (hostssl only, a
 * certificate signed by a throwaway CA) and a password (scram-sha-256), given in PGPASSWORD (once
 * in the URL) (D516-D518): sslmode=require connects; verify-full with the right CA connects; verify-full with
 * another CA, and sslmode=disable, fail the startup (exit 1) naming TLS with the password nowhere;
 * PGUSER is the login's user when the URL names none; `--session-db-pool` caps the daemon's
 * connections to the database (D515).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { injectAndWait } from "../../support/agent-durability.ts";
import { daemonScope, runToExit } from "../../support/daemon-scope.ts";
import { sparCommand, tempDir } from "../../support/daemon.ts";
import { type PostgresCluster, startPostgresCluster } from "../../support/postgres-cluster.ts";
import { TestCertificates } from "../../support/test-certificates.ts";

const scope = daemonScope();
let cluster: PostgresCluster;
/** A CA that did not sign the server's certificate. */
let otherCa: string;

const PASSWORD = "tls-pg-s3cret";
const ENV = { PGPASSWORD: PASSWORD };
const ARGS = ["--session-db-driver=postgres"];

beforeAll(() => {
  cluster = startPostgresCluster("spar", { password: PASSWORD, ssl: "required" });
  const certs = new TestCertificates(tempDir("spar-pg-other-ca-")).ca("other", "/CN=not-the-server-ca");
  otherCa = certs.path("other.crt");
});
afterAll(() => cluster?.stop());

/** A fresh database's URL without a password, with `query` (TLS parameters). */
function databaseUrl(name: string, query: string, user = "postgres@"): string {
  cluster.createDatabase(name);
  return `postgres://${user}127.0.0.1:${cluster.port}/${name}?${query}`;
}

/** A startup that must fail: exit 1, the message naming TLS, the password nowhere. */
async function refusedStartup(url: string, env: Record<string, string> = ENV) {
  const result = await runToExit(sparCommand("agent", "--attach-listen=127.0.0.1:0", ...ARGS, `--session-db=${url}`), {
    timeoutMs: 20_000,
    env,
  });
  expect(result.code).toBe(1);
  expect(`${result.stdout}${result.stderr}`).not.toContain(PASSWORD);
  expect(result.stderr).not.toContain("    at ");
  return result.stderr;
}

test("sslmode=require connects over TLS with the password from PGPASSWORD, never shown; the pool caps the connections", async () => {
  const url = databaseUrl("tls_require", "sslmode=require");
  const daemon = await scope.start({ sessionDb: url, args: [...ARGS, "--session-db-pool=3"], env: ENV });
  expect(daemon.log()).toContain(
    `store postgres postgres://***@127.0.0.1:${cluster.port}/tls_require?sslmode=require,`,
  );
  // Reads beside a turn want more connections than the pool holds.
  const reads = Array.from({ length: 8 }, () =>
    fetch(`${daemon.baseUrl}/sessions/default/events?since=0`, { signal: AbortSignal.timeout(500) }).catch(
      () => undefined,
    ),
  );
  await injectAndWait(daemon, "over tls", 1);
  await Promise.all(reads);
  const health = await (await fetch(`${daemon.baseUrl}/healthz`)).text();
  expect(health).not.toContain(PASSWORD);

  const sql = new SQL(`postgres://postgres:${PASSWORD}@127.0.0.1:${cluster.port}/tls_require?sslmode=require`, {
    max: 1,
  });
  try {
    const rows = await sql`
      SELECT count(*)::int AS connections, bool_and(s.ssl) AS all_tls
      FROM pg_stat_activity a JOIN pg_stat_ssl s ON s.pid = a.pid
      WHERE a.datname = 'tls_require' AND a.pid <> pg_backend_pid()`;
    const [row] = rows as Array<{ connections: number; all_tls: boolean }>;
    expect(row?.all_tls).toBe(true);
    expect(row?.connections).toBeGreaterThanOrEqual(1);
    // The pool's three (the writer's, the liveness mark's, one for reads) and the announcements' one (D490, D515).
    expect(row?.connections).toBeLessThanOrEqual(4);
  } finally {
    await sql.close();
  }
  expect(daemon.log()).not.toContain(PASSWORD);
}, 60_000);

test("verify-full with the server's CA in sslrootcert connects; with another CA the startup fails naming TLS", async () => {
  const good = databaseUrl("tls_verify", `sslmode=verify-full&sslrootcert=${cluster.caFile}`);
  const daemon = await scope.start({ sessionDb: good, args: ARGS, env: ENV });
  await injectAndWait(daemon, "verified", 1);
  expect(await daemon.sigterm()).toBe(0);

  // This time the password sits in the URL: the TLS refusal shows it as *** too.
  const wrong = `postgres://postgres:${PASSWORD}@127.0.0.1:${cluster.port}/tls_verify?sslmode=verify-full&sslrootcert=${otherCa}`;
  const stderr = await refusedStartup(wrong, {});
  expect(stderr).toContain(`cannot open session store postgres://***@127.0.0.1:${cluster.port}/tls_verify`);
  expect(stderr).toContain("TLS failed (sslmode=verify-full)");
});

test("sslmode=disable against a server that requires TLS fails the startup naming TLS", async () => {
  const url = databaseUrl("tls_disable", "sslmode=disable");
  const stderr = await refusedStartup(url);
  expect(stderr).toContain("TLS failed (sslmode=disable)");
  expect(stderr).toContain("no encryption");
});

test("PGUSER names the login's user when the URL has none: the right one logs in, an unknown one is refused", async () => {
  const url = databaseUrl("tls_pguser", "sslmode=require", "");
  const daemon = await scope.start({ sessionDb: url, args: ARGS, env: { ...ENV, PGUSER: "postgres" } });
  await injectAndWait(daemon, "as postgres", 1);
  expect(await daemon.sigterm()).toBe(0);
  const stderr = await refusedStartup(url, { ...ENV, PGUSER: "spar_nobody" });
  expect(stderr).toContain('"spar_nobody"');
});
