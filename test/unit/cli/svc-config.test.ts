/**
 * `spar svc`'s flag table and configuration builder: every default, precedence (flag > config
 * key > default), the environment (tokens, rates and bursts, the scripted model's script), the
 * loopback-or-token rule of each listener, unix attach sockets, and every refusal with its exact
 * text. Pure: the builder binds and opens nothing.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type SvcConfig, buildSvcConfig, svcConfigPath, svcStartupWarnings } from "../../../src/cli/svc-config.ts";
import { SVC_FLAGS, svcHelp } from "../../../src/cli/svc-flags.ts";
import { TrackedConfig, loadConfigFile } from "../../../src/config/config-file.ts";
import { parseFlags } from "../../../src/config/flag-parser.ts";
import type { Result } from "../../../src/core/result.ts";
import { DEFAULT_MCP_TIMEOUTS } from "../../../src/mcp/types.ts";

type Env = Record<string, string | undefined>;

function build(argv: string[], config: Record<string, unknown> = {}, env: Env = {}, cwd = "/work"): Result<SvcConfig> {
  const flags = parseFlags(SVC_FLAGS, argv);
  if (!flags.ok) return flags;
  return buildSvcConfig(flags.value.values, new Map(Object.entries(config)), env, cwd);
}

function value(result: Result<SvcConfig>): SvcConfig {
  if (!result.ok) throw new Error(`expected a config, got: ${result.error}`);
  return result.value;
}

function refusal(result: Result<SvcConfig>): string {
  if (result.ok) throw new Error("expected a refusal, got a config");
  return result.error;
}

describe("defaults", () => {
  test("every setting has the spec's default (main listener tightened to 127.0.0.1:7777)", () => {
    const config = value(build([]));
    expect(config).toMatchObject({
      workload: "",
      dispatch: undefined,
      model: { provider: "echo", name: "echo" },
      listen: { address: { host: "127.0.0.1", port: 7777 }, token: undefined },
      allowUnauthenticated: false,
      attach: undefined,
      a2a: undefined,
      agui: undefined,
      sessionDb: { driver: "sqlite", location: "", inMemory: true },
      timeoutMs: 300_000,
      watchdog: undefined,
      logLevel: "info",
      pricing: { source: undefined, refreshOnStart: false },
      mcpTimeouts: DEFAULT_MCP_TIMEOUTS,
      configDir: undefined,
    });
    expect(config.limits.inbox).toBeDefined();
  });

  test("auto-resume is asked for by default but off without --session-db, with the reason", () => {
    expect(value(build([])).autoResume).toEqual({
      enabled: false,
      windowMs: 3_600_000,
      offReason: "no --session-db: an in-memory store keeps nothing across a restart to resume",
    });
    expect(value(build(["--session-db=state/svc.db"])).autoResume).toEqual({
      enabled: true,
      windowMs: 3_600_000,
      offReason: undefined,
    });
    expect(value(build(["--session-db=s.db", "--auto-resume=false"])).autoResume).toEqual({
      enabled: false,
      windowMs: 3_600_000,
      offReason: "--auto-resume=false",
    });
  });

  test("a sqlite path is made absolute from cwd; an explicit empty --session-db is the in-memory store", () => {
    expect(value(build(["--session-db=state/svc.db"])).sessionDb).toEqual({
      driver: "sqlite",
      location: "/work/state/svc.db",
      inMemory: false,
      pool: 10,
      leaseMs: 15_000,
    });
    expect(value(build(["--session-db="])).sessionDb).toEqual({
      driver: "sqlite",
      location: "",
      inMemory: true,
      pool: 10,
      leaseMs: 15_000,
    });
    const dsn = "postgres://svc@db.internal:5432/svc";
    expect(value(build(["--session-db-driver=postgres", `--session-db=${dsn}`])).sessionDb).toEqual({
      driver: "postgres",
      location: dsn,
      inMemory: false,
      pool: 10,
      leaseMs: 15_000,
    });
  });

  test("--session-db-pool sizes the postgres pool (2..100) and is refused under sqlite (D515); TLS parameters are checked (D516)", () => {
    const dsn = "postgres://svc@db.internal:5432/svc";
    const postgres = ["--session-db-driver=postgres", `--session-db=${dsn}`];
    expect(value(build([...postgres, "--session-db-pool=3"])).sessionDb.pool).toBe(3);
    expect(value(build(postgres, { "svc.session_db.pool": 40 })).sessionDb.pool).toBe(40);
    expect(build([...postgres, "--session-db-pool=1"])).toEqual({
      ok: false,
      error: "--session-db-pool must be an integer from 3 to 100",
    });
    expect(build([...postgres, "--session-db-pool=101"]).ok).toBe(false);
    expect(build(["--session-db=s.db", "--session-db-pool=5"])).toEqual({
      ok: false,
      error:
        "--session-db-pool sizes the postgres store's connection pool and does not apply under --session-db-driver=sqlite",
    });
    const tls = (query: string) => build(["--session-db-driver=postgres", `--session-db=${dsn}?${query}`]);
    expect(value(tls("sslmode=verify-full&sslrootcert=/etc/ca.pem")).sessionDb.location).toContain("verify-full");
    expect(tls("sslmode=strict")).toEqual({
      ok: false,
      error:
        "--session-db: sslmode=strict is not a TLS mode: use one of disable, allow, prefer, require, verify-ca, verify-full",
    });
    expect(tls("sslmode=require&sslcert=/etc/client.pem")).toEqual({
      ok: false,
      error: "--session-db: sslcert and sslkey go together: a client certificate needs its key",
    });
  });

  test("durations: --timeout=0 and --auto-resume-window=0 disable; Go notation elsewhere", () => {
    const config = value(build(["--timeout=0", "--auto-resume-window=0", "--session-db=a.db"]));
    expect(config.timeoutMs).toBe(0);
    expect(config.autoResume.windowMs).toBe(0);
    expect(value(build(["--timeout=90s"])).timeoutMs).toBe(90_000);
  });

  test("--workload, --dispatch and --watchdog pass through; SVC_CONFIG_DIR is handed to the workload loader", () => {
    const config = value(
      build(["--workload=./triage", "--dispatch=fanout", "--watchdog=enforce"], {}, { SVC_CONFIG_DIR: "/etc/x" }),
    );
    expect(config).toMatchObject({
      workload: "./triage",
      dispatch: "fanout",
      watchdog: "enforce",
      configDir: "/etc/x",
    });
  });
});

describe("the open-stream caps users get without a flag (D334)", () => {
  test("a protocol token tells callers apart: 256 streams per caller; without one, every caller shares the global cap", () => {
    for (const [listen, token] of [
      ["--a2a-listen=127.0.0.1:0", "SVC_A2A_TOKEN"],
      ["--agui-listen=127.0.0.1:0", "SVC_AGUI_TOKEN"],
    ] as const) {
      const told = value(build([listen], {}, { [token]: "t" })).limits.streams;
      expect(told.maxPerCaller).toBe(Math.min(256, told.maxStreams));
      expect(told.maxPerCaller).toBeLessThan(told.maxStreams);
      const one = value(build([listen])).limits.streams;
      expect(one.maxPerCaller).toBe(one.maxStreams);
    }
    // Every listener's idle and body deadline without a flag: a minute.
    expect(value(build([])).limits.idleTimeoutSeconds).toBe(60);
  });
});

describe("precedence: flag, then config key, then default", () => {
  const file = {
    "svc.listen": "127.0.0.1:8000",
    "svc.timeout": "2m",
    "svc.watchdog": "warn",
    "svc.session_db.path": "/var/lib/svc.db",
    "svc.log.level": "debug",
    "svc.dispatch": "graph",
    "svc.auto_resume.window": "30m",
    "model.name": "echo",
    "mcp.call_timeout": "1m",
  };

  test("the config file's keys win over defaults", () => {
    expect(value(build([], file))).toMatchObject({
      listen: { address: { port: 8000 } },
      timeoutMs: 120_000,
      watchdog: "warn",
      sessionDb: { location: "/var/lib/svc.db" },
      logLevel: "debug",
      dispatch: "graph",
      autoResume: { enabled: true, windowMs: 1_800_000 },
      mcpTimeouts: { callMs: 60_000 },
    });
  });

  test("flags win over the config file", () => {
    const argv = ["--listen=127.0.0.1:9000", "--timeout=10s", "--watchdog=feedback", "--session-db=/tmp/x.db"];
    expect(value(build([...argv, "--log-level=error", "--dispatch=bounded"], file))).toMatchObject({
      listen: { address: { port: 9000 } },
      timeoutMs: 10_000,
      watchdog: "feedback",
      sessionDb: { location: "/tmp/x.db" },
      logLevel: "error",
      dispatch: "bounded",
    });
  });

  test("a nested YAML file under svc: reads the same keys; every key of the table is asked for", () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-config-"));
    const path = join(dir, "svc.yaml");
    writeFileSync(
      path,
      "svc:\n  listen: 127.0.0.1:7001\n  attach:\n    listen: unix:attach.sock\n  session_db:\n    path: s.db\n",
    );
    const loaded = loadConfigFile(path);
    if (!loaded.ok) throw new Error(loaded.error);
    const built = buildSvcConfig(new Map(), loaded.value, {}, dir);
    expect(value(built)).toMatchObject({
      listen: { address: { port: 7001 } },
      attach: { address: { kind: "unix", path: join(dir, "attach.sock") } },
    });
    const tracked = new TrackedConfig();
    expect(buildSvcConfig(new Map(), tracked, {}, dir).ok).toBe(true);
    const unasked = SVC_FLAGS.flatMap((spec) =>
      spec.configKey !== undefined && !tracked.wasAsked(spec.configKey) ? [spec.configKey] : [],
    );
    expect(unasked).toEqual([]);
  });

  test("svcConfigPath: --config, else .agents/svc.json or svc.yaml in cwd, else none", () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-config-"));
    expect(svcConfigPath(undefined, dir)).toBeUndefined();
    mkdirSync(join(dir, ".agents"));
    writeFileSync(join(dir, ".agents", "svc.yaml"), "svc: {}\n");
    expect(svcConfigPath(undefined, dir)).toBe(join(dir, ".agents", "svc.yaml"));
    expect(svcConfigPath("/etc/svc.json", dir)).toBe("/etc/svc.json");
  });
});

describe("the main listener: loopback, a token, or --allow-unauthenticated", () => {
  test("loopback addresses start without SVC_INJECT_TOKEN", () => {
    for (const listen of ["127.0.0.1:7777", "[::1]:7777", "localhost:7777", "127.0.0.2:0"])
      expect(build([`--listen=${listen}`]).ok).toBe(true);
  });

  test("every interface without SVC_INJECT_TOKEN is refused, naming the fix", () => {
    expect(refusal(build(["--listen=0.0.0.0:7777"]))).toBe(
      "--listen=0.0.0.0:7777 binds every interface and SVC_INJECT_TOKEN is not set: anyone who reaches it could inject, resume and abort; set SVC_INJECT_TOKEN, bind a loopback address such as 127.0.0.1:7777, or pass --allow-unauthenticated",
    );
    expect(refusal(build(["--listen=:7777"]))).toStartWith("--listen=:7777 binds every interface");
  });

  test("a LAN address without SVC_INJECT_TOKEN is refused; from the config file the key is named", () => {
    expect(refusal(build(["--listen=192.168.1.20:7777"]))).toStartWith(
      "--listen=192.168.1.20:7777 binds a non-loopback address and SVC_INJECT_TOKEN is not set:",
    );
    expect(refusal(build([], { "svc.listen": "10.0.0.5:7777" }))).toStartWith(
      "config key svc.listen=10.0.0.5:7777 binds a non-loopback address",
    );
  });

  test("with SVC_INJECT_TOKEN, or with --allow-unauthenticated, it starts", () => {
    expect(value(build(["--listen=0.0.0.0:7777"], {}, { SVC_INJECT_TOKEN: "s3cret" })).listen).toEqual({
      address: { host: "0.0.0.0", port: 7777 },
      token: "s3cret",
    });
    const open = value(build(["--listen=0.0.0.0:7777", "--allow-unauthenticated"]));
    expect(open).toMatchObject({ allowUnauthenticated: true, listen: { token: undefined } });
  });

  test("without SVC_INJECT_TOKEN the daemon warns it is open: local processes on loopback, anyone beyond it (D339)", () => {
    const [loopback] = svcStartupWarnings(value(build(["--listen=127.0.0.1:7777"])));
    expect(loopback).toBe(
      "SVC_INJECT_TOKEN is not set: the main listener on 127.0.0.1:7777 answers every request (inject, resume and the approval of gated calls, pause, abort, stop) from any process on this machine without credentials; for development only: set SVC_INJECT_TOKEN to require Authorization: Bearer <token>",
    );
    const open = svcStartupWarnings(value(build(["--listen=0.0.0.0:7777", "--allow-unauthenticated"])));
    expect(open).toHaveLength(1);
    expect(open[0]).toContain("on 0.0.0.0:7777 answers every request");
    expect(open[0]).toContain("from anyone who reaches it (--allow-unauthenticated)");
    expect(svcStartupWarnings(value(build([], {}, { SVC_INJECT_TOKEN: "s3cret" })))).toEqual([]);
  });

  test("--allow-unauthenticated is command line only (the config file cannot open a listener)", () => {
    expect(SVC_FLAGS.find((spec) => spec.name === "allow-unauthenticated")?.configKey).toBeUndefined();
    expect(build(["--listen=0.0.0.0:1"], { "svc.allow_unauthenticated": true }).ok).toBe(false);
  });

  test("a set but empty token variable is refused, listener on or off, without echoing anything", () => {
    for (const name of ["SVC_INJECT_TOKEN", "SVC_ATTACH_TOKEN", "SVC_A2A_TOKEN", "SVC_AGUI_TOKEN"])
      expect(refusal(build([], {}, { [name]: " " }))).toBe(
        `${name} is set but empty: give it the token, or unset it for no token`,
      );
  });

  test("a malformed address names the flag", () => {
    expect(refusal(build(["--listen=nonsense"]))).toBe(
      '--listen: invalid listen address "nonsense": expected HOST:PORT such as 127.0.0.1:7777',
    );
  });
});

describe("A2A and AG-UI listeners", () => {
  for (const [surface, flag] of [
    ["A2A", "a2a-listen"],
    ["AGUI", "agui-listen"],
  ] as const) {
    test(`--${flag} on loopback needs no token; beyond loopback SVC_${surface}_TOKEN is required`, () => {
      expect(value(build([`--${flag}=127.0.0.1:7780`]))[surface === "A2A" ? "a2a" : "agui"]).toEqual({
        address: { host: "127.0.0.1", port: 7780 },
        token: undefined,
        rate: undefined,
      });
      expect(build([`--${flag}=[::1]:7780`]).ok).toBe(true);
      expect(build([`--${flag}=localhost:7780`]).ok).toBe(true);
      const example = surface === "A2A" ? "127.0.0.1:7780" : "127.0.0.1:7781";
      expect(refusal(build([`--${flag}=0.0.0.0:7780`]))).toBe(
        `--${flag}=0.0.0.0:7780 binds every interface and SVC_${surface}_TOKEN is not set: set SVC_${surface}_TOKEN or bind a loopback address such as ${example}`,
      );
      expect(refusal(build([`--${flag}=192.168.0.9:7780`, "--allow-unauthenticated"]))).toStartWith(
        `--${flag}=192.168.0.9:7780 binds a non-loopback address and SVC_${surface}_TOKEN is not set`,
      );
      expect(build([`--${flag}=0.0.0.0:7780`], {}, { [`SVC_${surface}_TOKEN`]: "t" }).ok).toBe(true);
    });

    test(`SVC_${surface}_RATE and SVC_${surface}_BURST: burst defaults to ceil(rate), at least 1`, () => {
      const rate = (env: Env) => {
        const config = value(build([`--${flag}=127.0.0.1:0`], {}, env));
        return (surface === "A2A" ? config.a2a : config.agui)?.rate;
      };
      expect(rate({ [`SVC_${surface}_RATE`]: "5" })).toEqual({ perSecond: 5, burst: 5 });
      expect(rate({ [`SVC_${surface}_RATE`]: "2.5" })).toEqual({ perSecond: 2.5, burst: 3 });
      expect(rate({ [`SVC_${surface}_RATE`]: "0.2" })).toEqual({ perSecond: 0.2, burst: 1 });
      expect(rate({ [`SVC_${surface}_RATE`]: "3", [`SVC_${surface}_BURST`]: "10" })).toEqual({
        perSecond: 3,
        burst: 10,
      });
    });

    test(`a malformed SVC_${surface}_RATE or _BURST fails startup naming the variable, listener on or off`, () => {
      for (const bad of ["fast", "0", "-1", "", "1e3", "NaN"])
        expect(refusal(build([], {}, { [`SVC_${surface}_RATE`]: bad }))).toBe(
          `SVC_${surface}_RATE must be a positive number of requests per second (such as 5 or 0.5), got ${JSON.stringify(bad)}`,
        );
      for (const bad of ["0", "1.5", "-2", "many"])
        expect(refusal(build([], {}, { [`SVC_${surface}_RATE`]: "1", [`SVC_${surface}_BURST`]: bad }))).toBe(
          `SVC_${surface}_BURST must be a whole number of requests, at least 1, got ${JSON.stringify(bad)}`,
        );
      expect(refusal(build([], {}, { [`SVC_${surface}_BURST`]: "4" }))).toBe(
        `SVC_${surface}_BURST is set but SVC_${surface}_RATE is not: a burst needs a rate (requests per second)`,
      );
    });
  }
});

describe("the attach surface", () => {
  test("needs --session-db", () => {
    expect(refusal(build(["--attach-listen=127.0.0.1:7790"]))).toBe(
      "--attach-listen needs --session-db: the attach surface serves durable sessions, and without --session-db the store is in memory",
    );
    expect(refusal(build([], { "svc.attach.listen": "127.0.0.1:7790" }))).toStartWith(
      "config key svc.attach.listen needs --session-db",
    );
  });

  test("TCP: loopback without a token; beyond loopback only with SVC_ATTACH_TOKEN", () => {
    expect(value(build(["--attach-listen=127.0.0.1:7790", "--session-db=s.db"])).attach).toEqual({
      address: { kind: "tcp", address: { host: "127.0.0.1", port: 7790 } },
      token: undefined,
      ui: { corsOrigins: new Set() },
    });
    expect(refusal(build(["--attach-listen=0.0.0.0:7790", "--session-db=s.db"]))).toBe(
      "--attach-listen=0.0.0.0:7790 binds every interface and SVC_ATTACH_TOKEN is not set: set SVC_ATTACH_TOKEN, bind a loopback address, or use a unix:/path socket",
    );
    const env = { SVC_ATTACH_TOKEN: "a" };
    expect(value(build(["--attach-listen=0.0.0.0:7790", "--session-db=s.db"], {}, env)).attach?.token).toBe("a");
  });

  test("--ui-dir and --attach-cors-origins configure the attach surface, so they need --attach-listen", () => {
    expect(refusal(build(["--ui-dir=/", "--session-db=s.db"]))).toBe(
      "--ui-dir needs --attach-listen: it configures the attach surface",
    );
    expect(refusal(build(["--session-db=s.db"], { "attach.cors_origins": "https://a.example" }))).toBe(
      "config key attach.cors_origins needs --attach-listen: it configures the attach surface",
    );
    const attach = value(build(["--attach-listen=127.0.0.1:7790", "--session-db=s.db", "--ui-dir=/"])).attach;
    expect(attach?.ui).toEqual({ uiDir: "/", corsOrigins: new Set() });
  });

  test("unix:/path sockets need no token; a relative path is taken from cwd", () => {
    expect(value(build(["--attach-listen=unix:/run/svc/attach.sock", "--session-db=s.db"])).attach).toEqual({
      address: { kind: "unix", path: "/run/svc/attach.sock" },
      token: undefined,
      ui: { corsOrigins: new Set() },
    });
    expect(value(build(["--attach-listen=unix:run/a.sock", "--session-db=s.db"])).attach?.address).toEqual({
      kind: "unix",
      path: "/work/run/a.sock",
    });
  });

  test("an empty or overlong unix socket path is refused", () => {
    expect(refusal(build(["--attach-listen=unix:", "--session-db=s.db"]))).toBe(
      "--attach-listen=unix: needs a socket path (unix:/path/sock)",
    );
    const long = `/tmp/${"s".repeat(120)}.sock`;
    expect(refusal(build([`--attach-listen=unix:${long}`, "--session-db=s.db"]))).toBe(
      `--attach-listen: the socket path ${long} is ${long.length} bytes; a unix socket path is at most 107 (use a shorter one)`,
    );
  });
});

describe("the session store", () => {
  test("postgres with an empty --session-db is refused", () => {
    const message =
      "--session-db-driver=postgres needs --session-db with a postgres:// URL (an empty --session-db is the in-memory store)";
    expect(refusal(build(["--session-db-driver=postgres"]))).toBe(message);
    expect(refusal(build(["--session-db-driver=postgres", "--session-db="]))).toBe(message);
  });

  test("a postgres store that is not a postgres:// URL is refused with the form", () => {
    expect(refusal(build(["--session-db-driver=postgres", "--session-db=host=db dbname=svc"]))).toBe(
      "--session-db under --session-db-driver=postgres must be a postgres:// URL (postgres://user:password@host:5432/database)",
    );
  });

  test("a postgres URL under the sqlite driver is refused with the fix", () => {
    expect(refusal(build(["--session-db=postgres://db/svc"]))).toBe(
      "--session-db is a postgres URL but the driver is sqlite: add --session-db-driver=postgres",
    );
  });
});

describe("models", () => {
  test("scripted needs SVC_SCRIPT, which must exist; SVC_SCRIPT_STRICT=1 turns strict matching on", () => {
    expect(refusal(build(["--model=scripted"]))).toBe(
      'model "scripted" requires SVC_SCRIPT (path to a JSON Lines script)',
    );
    expect(refusal(build(["--provider=scripted"]))).toBe(
      'model "scripted" requires SVC_SCRIPT (path to a JSON Lines script)',
    );
    expect(refusal(build(["--model=scripted"], {}, { SVC_SCRIPT: "missing.jsonl" }))).toBe(
      "SVC_SCRIPT: missing.jsonl does not exist",
    );
    const dir = mkdtempSync(join(tmpdir(), "svc-script-"));
    writeFileSync(join(dir, "turns.jsonl"), "");
    const env = { SVC_SCRIPT: "turns.jsonl" };
    expect(value(build(["--model=scripted"], {}, env, dir)).model).toEqual({
      provider: "scripted",
      name: "scripted",
      scriptPath: "turns.jsonl",
      scriptStrict: false,
    });
    const strict = value(build(["--model=scripted"], {}, { ...env, SVC_SCRIPT_STRICT: "1" }, dir));
    expect(strict.model.scriptStrict).toBe(true);
    expect(refusal(build(["--model=scripted"], {}, { ...env, SVC_SCRIPT_STRICT: "true" }, dir))).toBe(
      'SVC_SCRIPT_STRICT must be 1 (strict matching) or 0, got "true"',
    );
  });

  test("SVC_SCRIPT is not read under another model", () => {
    expect(value(build([], {}, { SVC_SCRIPT: "missing.jsonl", SVC_SCRIPT_STRICT: "yes" })).model.provider).toBe("echo");
  });

  test("the real providers resolve as the agent's do", () => {
    expect(value(build(["--model=gpt-5-mini"])).model).toEqual({ provider: "openai", name: "gpt-5-mini" });
    expect(value(build(["--provider=anthropic", "--model=claude-sonnet-4-5"])).model.provider).toBe("anthropic");
    expect(refusal(build(["--provider=bogus"]))).toStartWith('--provider "bogus" is not a provider');
    expect(refusal(build(["--model=echo", "--model-base-url=http://x/v1"]))).toBe(
      "--model-base-url applies to remote providers only, not echo",
    );
  });
});

describe("usage errors name the flag", () => {
  test("bad enum values", () => {
    expect(refusal(build(["--session-db-driver=mysql"]))).toBe("--session-db-driver must be one of sqlite, postgres");
    expect(refusal(build(["--watchdog=off"]))).toBe("--watchdog must be one of warn, feedback, enforce");
    expect(refusal(build(["--dispatch=star"]))).toBe(
      "--dispatch must be one of coordinator, graph, fanout, bounded, auto",
    );
    expect(refusal(build(["--log-level=verbose"]))).toBe("--log-level must be one of debug, info, warn, error");
    expect(refusal(build([], { "svc.watchdog": "loud" }))).toBe(
      "config key svc.watchdog must be one of warn, feedback, enforce",
    );
  });

  test("bad durations", () => {
    expect(refusal(build(["--timeout=5"]))).toStartWith("--timeout: invalid duration");
    expect(refusal(build(["--auto-resume-window=soon"]))).toStartWith("--auto-resume-window: invalid duration");
    expect(refusal(build([], { "svc.timeout": 300 }))).toStartWith("config key svc.timeout: not a duration");
  });

  test("unknown flags, the agent's own included", () => {
    for (const flag of ["--mcp-config=x", "--attach-token=T", "--script=s.jsonl", "--bogus"])
      expect(refusal(build([flag]))).toBe(`unknown flag ${flag.split("=")[0]} (see --help)`);
  });

  test("--version is a flag of the table (the command prints the version before building a config)", () => {
    const parsed = parseFlags(SVC_FLAGS, ["--version"]);
    expect(parsed.ok && parsed.value.values.get("version")).toBe(true);
  });
});

test("--help lists every flag of the table, each daemon flag of the spec among them", () => {
  const help = svcHelp();
  const listed = [...help.matchAll(/^ {2}--([a-z0-9-]+)/gm)].map((match) => match[1]).filter((name) => name !== "help");
  expect(listed).toEqual(SVC_FLAGS.map((spec) => spec.name));
  for (const name of [
    "workload",
    "dispatch",
    "model",
    "provider",
    "listen",
    "attach-listen",
    "a2a-listen",
    "agui-listen",
    "session-db",
    "session-db-driver",
    "timeout",
    "auto-resume",
    "auto-resume-window",
    "watchdog",
    "log-level",
    "version",
    "allow-unauthenticated",
    "config",
  ])
    expect(listed).toContain(name);
  expect(help).toContain("default 127.0.0.1:7777; config svc.listen");
  expect(new Set(listed).size).toBe(listed.length);
});

test("svc reads the shared telemetry setting under the agent's key: --otel-endpoint or otel.endpoint", () => {
  expect(value(build([], { "otel.endpoint": "http://collector:4318" })).telemetry).toEqual({
    endpoint: "http://collector:4318",
  });
  expect(refusal(build(["--otel-endpoint=ftp://collector"]))).toContain("--otel-endpoint");
});

test("--session-db-lease of svc: 15 s unset (above); set by flag or svc.session_db.lease, 1 s to 10 min (D493)", () => {
  const postgres = ["--session-db-driver=postgres", "--session-db=postgres://svc@db.internal:5432/svc"];
  expect(value(build([...postgres, "--session-db-lease=45s"])).sessionDb.leaseMs).toBe(45_000);
  expect(value(build(postgres, { "svc.session_db.lease": "2s" })).sessionDb.leaseMs).toBe(2_000);
  expect(build([...postgres, "--session-db-lease=0s"]).ok).toBe(false);
});
