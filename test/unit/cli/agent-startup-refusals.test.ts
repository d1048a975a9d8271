/**
 * Startup refusals of pure configuration, decided in process (milliseconds, no daemon): a flag or
 * config-file mistake is a usage error naming the flag or key (the command exits 2); a listen
 * address beyond loopback without a gate is refused by startAgent (the command exits 1). One
 * process-level test per path keeps the exit code itself checked (test/integration/agent/config-file,
 * test/security/attach-listen-policy).
 */
import { expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startupRefusal, usageError } from "../../support/agent-startup.ts";
import { tempDir } from "../../support/daemon.ts";

/** A working directory with `.agents/<name>` holding `text`. */
function projectWith(name: string, text: string): string {
  const cwd = tempDir();
  mkdirSync(join(cwd, ".agents"));
  writeFileSync(join(cwd, ".agents", name), text);
  return cwd;
}

const base = (cwd: string) => ["--attach-listen=127.0.0.1:0", `--session-db=${join(cwd, "s.db")}`];

test("a bad config value is a usage error naming the key", () => {
  const cwd = projectWith(
    "config.json",
    JSON.stringify({ attach: { multi_session: { session_idle_timeout: "soon" } } }),
  );
  expect(usageError(base(cwd), cwd)).toContain("attach.multi_session.session_idle_timeout");
});

test("an unknown flag is a usage error naming it", () => {
  const cwd = tempDir();
  expect(usageError(["--no-such-flag"], cwd)).toContain("unknown flag --no-such-flag");
});

test("0.0.0.0 without a gate is refused at start, naming the address", async () => {
  const cwd = tempDir();
  expect(await startupRefusal(["--attach-listen=0.0.0.0:0", `--session-db=${join(cwd, "t.db")}`], cwd)).toContain(
    "refusing to listen on 0.0.0.0",
  );
});

test("durations: a bare number in the file and anything past the longest timer are usage errors naming the setting", () => {
  const cwd = projectWith("config.yaml", "attach:\n  multi_session:\n    session_idle_timeout: 1800\n");
  const bare = usageError(base(cwd), cwd);
  expect(bare).toContain("attach.multi_session.session_idle_timeout: not a duration");
  expect(bare).toContain("bare number");
  const clean = tempDir();
  const long = usageError([...base(clean), "--sse-heartbeat=600h"], clean);
  expect(long).toContain("--sse-heartbeat must be at most 596h31m24s");
  expect(long).not.toContain("    at ");
});

test("the peer state file without the hub is a usage error naming --attach-peer-hub", () => {
  const dir = tempDir();
  expect(usageError([...base(dir), `--attach-peer-state-file=${join(dir, "p.jsonl")}`], dir)).toContain(
    "--attach-peer-hub",
  );
});

test("a pricing source that is neither http(s) nor a path is a usage error naming the flag", () => {
  const dir = tempDir();
  expect(usageError([...base(dir), "--pricing-source=ftp://example.com/p.json"], dir)).toContain(
    "--pricing-source must be an http(s) URL or a file path",
  );
});

test("a malformed --outbound-allow entry is a usage error naming it", () => {
  const cwd = tempDir("spar-tools-");
  expect(usageError([...base(cwd), "--outbound-allow=10.0.0.0/8,10.0.0.1/8"], cwd)).toContain(
    '--outbound-allow: "10.0.0.1/8" has bits set past the /8 prefix (did you mean 10.0.0.0/8?)',
  );
});

test("a caller table naming an identity the daemon itself uses is refused at start, naming the entry (D328)", async () => {
  for (const identity of ["svc-inject", "local", "mast:dash"]) {
    const cwd = tempDir();
    const table = join(cwd, "callers.yaml");
    writeFileSync(
      table,
      `callers:\n  - identity: alice\n    token_env: ALICE_T\n  - identity: ${identity}\n    token_env: OTHER_T\n`,
    );
    const refusal = await startupRefusal([...base(cwd), "--multi-session", `--auth-table=${table}`], cwd, {
      ALICE_T: "tok-a",
      OTHER_T: "tok-o",
    });
    expect(refusal).toContain(`callers.1 (${identity})`);
    expect(refusal).toContain("name the caller otherwise");
  }
});

test("an auth block key without a caller table or client certificates is a usage error, never ignored (D330)", () => {
  const cwd = projectWith(
    "config.json",
    JSON.stringify({ attach: { multi_session: { auth: { admin_identities: ["CN=root"] } } } }),
  );
  expect(usageError([...base(cwd), "--multi-session"], cwd)).toContain(
    "config key attach.multi_session.auth.admin_identities needs callers told apart",
  );
});

test("allow_anonymous with client certificates alone is a usage error: every client presents one (D330)", () => {
  const cwd = projectWith(
    "config.json",
    JSON.stringify({ attach: { multi_session: { auth: { allow_anonymous: true } } } }),
  );
  // The settings only check that the files exist.
  for (const file of ["s.crt", "s.key", "ca.crt"]) writeFileSync(join(cwd, file), "");
  const tls = ["s.crt", "s.key", "ca.crt"].map(
    (file, index) => `--attach-${["tls-cert", "tls-key", "client-ca"][index]}=${join(cwd, file)}`,
  );
  expect(usageError([...base(cwd), ...tls], cwd)).toContain(
    "allow_anonymous cannot apply with client certificates alone",
  );
});
