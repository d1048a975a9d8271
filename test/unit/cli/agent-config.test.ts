import { expect, test } from "bun:test";
import { AGENT_FLAGS } from "../../../src/cli/agent-flags.ts";
import { buildAgentConfig } from "../../../src/cli/agent-config.ts";
import { parseFlags } from "../../../src/config/flag-parser.ts";
import { TrackedConfig } from "../../../src/config/config-file.ts";
import { isLoopbackHost, parseListenAddress } from "../../../src/config/listen-address.ts";

function build(argv: string[], config: Record<string, unknown> = {}) {
  const flags = parseFlags(AGENT_FLAGS, argv);
  if (!flags.ok) return flags;
  return buildAgentConfig(flags.value.values, new Map(Object.entries(config)), "/work", 2);
}

test("defaults", () => {
  const config = build([]);
  expect(config).toMatchObject({
    ok: true,
    value: {
      listen: { host: "127.0.0.1", port: 7777 },
      sessionDb: "/work/.agents/state/sessions.db",
      model: { provider: "echo", name: "echo" },
      multiSession: false,
      idleTimeoutMs: 1_800_000,
      workers: 2,
      appName: "spar",
      subscriberBuffer: 4096,
      heartbeatMs: 15_000,
      logLevel: "info",
      subagents: [],
      wakeLoop: true,
    },
  });
  // Plans live under the tools root's .agents/plans unless --plans-dir says otherwise (D358).
  expect(config.ok && config.value.plansDir).toBe(`${config.ok ? config.value.tools.root : ""}/.agents/plans`);
  expect(config.ok && config.value.tools.digest).toEqual({ strategy: "structural", thresholdBytes: 16_384 });
});

test("flags win over config keys; both spellings of a value work", () => {
  const config = build(["--attach-listen", "127.0.0.1:9000", "--multi-session"], {
    "attach.listen": "127.0.0.1:8000",
    "attach.multi_session.enabled": false,
    "attach.multi_session.session_idle_timeout": "1h30m0s",
  });
  expect(config).toMatchObject({
    ok: true,
    value: { listen: { port: 9000 }, multiSession: true, idleTimeoutMs: 5_400_000 },
  });
});

test("bad values name the flag or key", () => {
  expect(build(["--attach-listen=nonsense"])).toEqual({ ok: false, error: expect.stringContaining("--attach-listen") });
  expect(build([], { "agent.workers": 0 })).toEqual({
    ok: false,
    error: "config key agent.workers must be an integer from 1 to 64",
  });
  expect(build(["--log-level=loud"])).toEqual({
    ok: false,
    error: expect.stringContaining("--log-level must be one of"),
  });
  expect(build(["--model=scripted"])).toEqual({ ok: false, error: expect.stringContaining("requires --script") });
  expect(build(["--model=scripted", "--script=no-such-recording.jsonl"])).toEqual({
    ok: false,
    error: "--script: no-such-recording.jsonl does not exist",
  });
  expect(build(["--model=mistral-large"])).toEqual({
    ok: false,
    error: expect.stringContaining("name its provider with --provider"),
  });
  expect(build(["--session-db-driver=postgres"])).toEqual({
    ok: false,
    error: expect.stringContaining("--session-db-driver"),
  });
  expect(build(["--sse-heartbeat=5ms"])).toEqual({ ok: false, error: expect.stringContaining("at least 100ms") });
  expect(build(["--bogus"])).toEqual({ ok: false, error: "unknown flag --bogus (see --help)" });
});

test("the postgres driver takes a postgres:// URL, checked by svc's rule, and refuses the sqlite cap (D483, D484)", () => {
  const url = "postgres://spar:pw@db.example:5432/spar";
  expect(build(["--session-db-driver=postgres", `--session-db=${url}`])).toMatchObject({
    ok: true,
    value: { sessionDbDriver: "postgres", sessionDb: url, sessionDbMaxMb: 0 },
  });
  expect(build([], { "session_db.driver": "postgres", "session_db.path": url })).toMatchObject({
    ok: true,
    value: { sessionDbDriver: "postgres", sessionDb: url },
  });
  expect(build(["--session-db-driver=postgres"])).toEqual({
    ok: false,
    error: "--session-db-driver=postgres needs --session-db with a postgres:// URL",
  });
  // The refusal names the flag, never the value (a URL may carry a password).
  expect(build(["--session-db-driver=postgres", "--session-db=/tmp/sessions.db"])).toEqual({
    ok: false,
    error:
      "--session-db under --session-db-driver=postgres must be a postgres:// URL (postgres://user:password@host:5432/database)",
  });
  expect(build([`--session-db=${url}`])).toEqual({
    ok: false,
    error: "--session-db is a postgres URL but the driver is sqlite: add --session-db-driver=postgres",
  });
  expect(build(["--session-db-driver=postgres", `--session-db=${url}`, "--session-db-max-mb=64"])).toEqual({
    ok: false,
    error: expect.stringContaining("--session-db-max-mb caps a sqlite file and does not apply under"),
  });
  expect(build(["--session-db-driver=mysql"])).toEqual({
    ok: false,
    error: "--session-db-driver must be one of sqlite, postgres",
  });
  expect(build([])).toMatchObject({ ok: true, value: { sessionDbDriver: "sqlite" } });
});

test("--session-db-pool sizes the postgres pool, default 10, 3..100, refused under sqlite (D515); TLS parameters checked (D516)", () => {
  const url = "postgres://spar:pw@db.example:5432/spar";
  const postgres = ["--session-db-driver=postgres", `--session-db=${url}`];
  expect(build(postgres)).toMatchObject({ ok: true, value: { sessionDbPool: 10 } });
  expect(build([...postgres, "--session-db-pool=25"])).toMatchObject({ ok: true, value: { sessionDbPool: 25 } });
  expect(build(postgres, { "session_db.pool": 3 })).toMatchObject({ ok: true, value: { sessionDbPool: 3 } });
  expect(build(postgres, { "session_db.pool": 2 }).ok).toBe(false);
  expect(build([...postgres, "--session-db-pool=500"])).toEqual({
    ok: false,
    error: "--session-db-pool must be an integer from 3 to 100",
  });
  expect(build(["--session-db-pool=4"])).toEqual({
    ok: false,
    error:
      "--session-db-pool sizes the postgres store's connection pool and does not apply under --session-db-driver=sqlite",
  });
  expect(build([], { "session_db.pool": 4 })).toMatchObject({
    ok: false,
    error: expect.stringContaining("session_db.pool"),
  });
  const tls = (query: string) => build(["--session-db-driver=postgres", `--session-db=${url}?${query}`]);
  expect(tls("sslmode=verify-ca&sslrootcert=/etc/ca.pem&sslcert=/c.pem&sslkey=/c.key")).toMatchObject({ ok: true });
  // The refusal names the parameter, never the URL (its password).
  expect(tls("sslmode=on")).toEqual({
    ok: false,
    error:
      "--session-db: sslmode=on is not a TLS mode: use one of disable, allow, prefer, require, verify-ca, verify-full",
  });
  expect(tls("sslrootcert=")).toEqual({
    ok: false,
    error: "--session-db: sslrootcert= is empty: give a value or leave the parameter out",
  });
  expect(tls("sslkey=/c.key").ok).toBe(false);
});

test("listen addresses and the loopback test", () => {
  expect(parseListenAddress("[::1]:7777")).toEqual({ ok: true, value: { host: "::1", port: 7777 } });
  expect(parseListenAddress(":7777")).toEqual({ ok: true, value: { host: "", port: 7777 } });
  expect(parseListenAddress("host:99999").ok).toBe(false);
  for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "::1"]) expect(isLoopbackHost(host)).toBe(true);
  for (const host of ["", "0.0.0.0", "::", "10.0.0.1", "example.com", "127.0.0.256"])
    expect(isLoopbackHost(host)).toBe(false);
});

test("every config key of the flag tables is asked for at startup (so only keys nothing reads are reported), but the scripted model's own", () => {
  const config = new TrackedConfig();
  const built = buildAgentConfig(new Map(), config, process.cwd(), 2);
  expect(built.ok).toBe(true);
  const unasked = AGENT_FLAGS.flatMap((spec) =>
    spec.configKey !== undefined && !config.wasAsked(spec.configKey) ? [spec.configKey] : [],
  );
  expect(unasked).toEqual(["model.script", "model.script_strict"]);
  for (const key of ["attach.multi_session.auth.admin_identities", "permissions.allow", "agent.description"])
    expect(config.wasAsked(key)).toBe(true);
});

test("--otel-endpoint or the config key otel.endpoint; unset, no endpoint; not http(s), refused naming where it came from", () => {
  expect(build([])).toMatchObject({ ok: true, value: { telemetry: { endpoint: undefined } } });
  expect(build(["--otel-endpoint=http://collector:4318"])).toMatchObject({
    ok: true,
    value: { telemetry: { endpoint: "http://collector:4318" } },
  });
  expect(build([], { "otel.endpoint": "https://otlp.example:443" })).toMatchObject({
    ok: true,
    value: { telemetry: { endpoint: "https://otlp.example:443" } },
  });
  expect(build([], { "otel.endpoint": "collector:4318" })).toEqual({
    ok: false,
    error: 'config key otel.endpoint: "collector:4318" must be an http:// or https:// URL (OTLP over HTTP)',
  });
  expect(build(["--otel-endpoint=not a url"])).toMatchObject({
    ok: false,
    error: expect.stringContaining("--otel-endpoint"),
  });
});

test("--session-db-lease: 15 s when neither the flag nor session_db.lease is set; 1 s to 10 min (D487)", () => {
  const postgres = ["--session-db-driver=postgres", "--session-db=postgres://spar@db.example:5432/spar"];
  expect(build(postgres)).toMatchObject({ ok: true, value: { sessionDbLeaseMs: 15_000 } });
  expect(build([...postgres, "--session-db-lease=30s"])).toMatchObject({
    ok: true,
    value: { sessionDbLeaseMs: 30_000 },
  });
  expect(build(postgres, { "session_db.lease": "5s" })).toMatchObject({ ok: true, value: { sessionDbLeaseMs: 5_000 } });
  expect(build([...postgres, "--session-db-lease=500ms"])).toEqual({
    ok: false,
    error: "--session-db-lease must be between 1s and 10m (got 500 ms)",
  });
  expect(build([...postgres, "--session-db-lease=11m"]).ok).toBe(false);
});
