/**
 * The token-burn source (D403-D405) against a real `spar agent` (in process, multi-session, the
 * scripted model whose recorded usage makes each turn's tokens known, a price set for it): the
 * runner polls `/sessions` and each active session's `/usage` as the watcher (a proxy asserting
 * the owner), on a stepped clock: one poll at 4× the peers' median rate is nothing, the second is
 * the warning; the spend projected past the budget is the critical. A wrong token is a 401 logged
 * once and explained, an answer that is not the daemon's crashes nothing, and the watcher named
 * with `--sources=...,token-burn` pages the budget end to end (dry-run) while `auto` never runs it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { sha256Hex } from "../../../src/surfaces/http/caller-auth.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import type { ClearanceReport } from "../../../src/watcher/core/open-conditions.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import { SOURCE_RUNNERS } from "../../../src/watcher/sources/source-registry.ts";
import type { TokenBurnSource } from "../../../src/watcher/sources/token-burn-source.ts";
import { startWatcher } from "../../../src/watcher/watch-runner.ts";
import { tempDir, waitFor } from "../../support/daemon.ts";
import { type InProcessAgent, startInProcessAgent } from "../../support/in-process-agent.ts";
import { say, writeScript } from "../../support/scripted.ts";

const OWNER = "oncall@example.com";
const ENV = { WATCHER_TOKEN: "tok-watcher", OPS_TOKEN: "tok-ops" };
const MIN = 60_000;
/** $10 per million tokens in and out: 1000 tokens cost a cent. */
const PRICE = { model: "scripted", input_usd_per_mtok: 10, output_usd_per_mtok: 10 };

/** One scripted turn using `tokens` (half input, 40% output, 10% thoughts). */
const turn = (tokens: number) =>
  say("ok", {
    usageMetadata: {
      promptTokenCount: tokens * 0.5,
      candidatesTokenCount: tokens * 0.4,
      thoughtsTokenCount: tokens * 0.1,
    },
  });

/** The turns of the test, in the order it injects them (one script for the whole daemon). */
const ROUND = [turn(5000), turn(1000), turn(1200)];
const SCRIPT = [ROUND, ROUND, ROUND, ROUND, ROUND, ROUND].flat();

/** The watcher a proxy asserting the owner; `ops` an admin (it sets the price). */
function authArgs(dir: string): string[] {
  const table = join(dir, "callers.yaml");
  writeFileSync(
    table,
    [
      "callers:",
      "  - identity: watcher",
      "    token_env: WATCHER_TOKEN",
      "  - identity: ops",
      "    token_env: OPS_TOKEN",
      `  - identity: ${OWNER}`,
      `    token_sha256: ${sha256Hex("tok-oncall")}`,
      "",
    ].join("\n"),
  );
  writeFileSync(
    join(dir, "config.json"),
    JSON.stringify({
      attach: { multi_session: { auth: { proxy_identities: ["watcher"], admin_identities: ["ops"] } } },
    }),
  );
  return ["--multi-session", `--auth-table=${table}`, `--config=${join(dir, "config.json")}`];
}

const asOwner = {
  authorization: `Bearer ${ENV.WATCHER_TOKEN}`,
  "x-asserted-caller": OWNER,
  "content-type": "application/json",
};

let daemon: InProcessAgent;
let api: FakeApiserver;

async function turns(id: string): Promise<number> {
  const usage = (await (await fetch(`${daemon.baseUrl}/sessions/${id}/usage`, { headers: asOwner })).json()) as {
    overall: { turns: number };
  };
  return usage.overall.turns;
}

/** One turn in each of a, b, c, in order (so each takes its line of the round), each waited for. */
async function round(): Promise<void> {
  for (const id of ["a", "b", "c"]) {
    const before = await turns(id);
    const injected = await fetch(`${daemon.baseUrl}/sessions/${id}/inject`, {
      method: "POST",
      headers: asOwner,
      body: JSON.stringify({ message: "go" }),
    });
    expect(injected.status).toBe(200);
    await waitFor(async () => ((await turns(id)) > before ? true : undefined), 10_000, `turn of ${id}`);
  }
}

beforeAll(async () => {
  const dir = tempDir();
  [daemon, api] = await Promise.all([
    startInProcessAgent({
      args: [...authArgs(dir), "--model=scripted", `--script=${writeScript(SCRIPT)}`],
      env: ENV,
    }),
    startFakeApiserver(),
  ]);
  for (const id of ["a", "b", "c"]) {
    const created = await fetch(`${daemon.baseUrl}/sessions`, {
      method: "POST",
      headers: asOwner,
      body: JSON.stringify({ sessionID: id }),
    });
    expect(created.status).toBe(201);
  }
  const priced = await fetch(`${daemon.baseUrl}/sessions/a/pricing/set`, {
    method: "POST",
    headers: { authorization: `Bearer ${ENV.OPS_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(PRICE),
  });
  expect(priced.status).toBe(204);
});

afterAll(async () => {
  await Promise.all([daemon?.stop(), api?.stop()]);
});

/** The runner as the watcher builds it (SOURCE_RUNNERS), on a clock the test steps. */
function runner(args: string[], env: Record<string, string> = ENV) {
  const parsed = watcherConfigFromArgv([
    `--daemon-url=${daemon.baseUrl}`,
    "--token-env=WATCHER_TOKEN",
    `--owner=${OWNER}`,
    "--token-poll=1h",
    ...args,
  ]);
  if (!parsed.ok) throw new Error(parsed.error);
  const signals: Signal[] = [];
  const lines: string[] = [];
  const clearances: ClearanceReport[] = [];
  let now = Date.parse("2026-11-29T10:00:00Z");
  const factory = SOURCE_RUNNERS["token-burn"];
  if (!factory) throw new Error("token-burn has no runner");
  const source = factory({
    values: parsed.value.values,
    env,
    connection: { server: api.url, tls: {}, token: () => undefined },
    without: new Set(),
    emit: (signal) => signals.push(signal),
    logger: createLogger("debug", (line) => lines.push(line)),
    onRestart: () => {},
    clearance: (report) => clearances.push(report),
    now: () => now,
  }) as TokenBurnSource;
  return {
    source,
    signals,
    clearances,
    lines,
    /** Step the clock and poll (the first call joins the poll `start` began). */
    async poll(minutes: number): Promise<Signal[]> {
      now += minutes * MIN;
      const before = signals.length;
      await source.poll();
      return signals.slice(before);
    },
  };
}

describe("against a real agent daemon", () => {
  test("4× the peers' median on one poll is nothing, on the second the warning; the budget projected out within --burn-eta is critical", async () => {
    const burn = runner(["--token-budget-usd=1", "--burn-eta=30m"]);
    await burn.source.start();
    try {
      expect(burn.source.synced).toBe(false);
      expect(await burn.poll(0)).toEqual([]); // the first answer fills state: a, b, c at 0 tokens
      expect(burn.source.synced).toBe(true);
      expect(burn.source.lastError).toBeUndefined();
      await round(); // a 5000 tokens ($0.05), b 1000, c 1200: a is 4.5× the median of its peers
      const first = await burn.poll(1);
      // Not the rate yet (one poll); the budget: $0.95 left at $0.05/min is 19m away.
      expect(first).toMatchObject([
        { kind: "token.burn", reason: "token_budget", severity: "critical", uid: "session:spar/a", name: "spar/a" },
      ]);
      expect(first[0]?.message).toBe(
        "agent session spar/a has spent $0.05 of its $1.00 budget; at $0.05/min it runs out in 19m0s (--burn-eta 30m0s)",
      );
      await round();
      const second = await burn.poll(1);
      expect(second).toMatchObject([
        { kind: "token.burn", reason: "token_burn", severity: "warning", uid: "session:spar/a", namespace: "" },
      ]);
      expect(second[0]?.message).toContain(
        "burns 5000 tokens/min over the last 2m0s, 4.5× the median of 2 other sessions (1100 tokens/min)",
      );
      await round();
      expect(await burn.poll(1)).toEqual([]); // both ongoing: paged once each
      // Both reported open for recovery as they paged, nothing cleared (D437).
      expect(burn.clearances.map(({ event, uid, reason }) => `${event} ${uid} ${reason}`)).toEqual([
        "opened session:spar/a token_budget",
        "opened session:spar/a token_burn",
      ]);
      expect(burn.lines.join("\n")).toContain(`source token-burn: polling ${daemon.baseUrl}/sessions every 1h0m0s`);
      expect(burn.lines.join("\n")).not.toContain("poll failed");
    } finally {
      await burn.source.stop();
    }
  }, 60_000);

  test("a wrong token: the 401 is logged once, explained, and held in lastError; synced stays false", async () => {
    const refused = runner([], { WATCHER_TOKEN: "wrong" });
    await refused.source.start();
    try {
      await refused.poll(0);
      await refused.poll(1);
      await refused.poll(1);
      const failures = refused.lines.filter((line) => line.includes("poll failed"));
      expect(failures).toHaveLength(1);
      expect(failures[0]).toContain("GET /sessions: HTTP 401");
      expect(failures[0]).toContain(
        "the daemon does not accept the token in WATCHER_TOKEN: check --token-env names a token of the daemon's caller table",
      );
      expect(refused.source.synced).toBe(false);
      expect(refused.source.lastError).toContain("HTTP 401");
      expect(refused.signals).toEqual([]);
    } finally {
      await refused.source.stop();
    }
  });

  test("the watcher named with token-burn pages the budget end to end; auto never constructs it", async () => {
    const lines: string[] = [];
    const printed: string[] = [];
    const start = (sources: string, extra: string[] = []) => {
      const parsed = watcherConfigFromArgv([
        "--dry-run",
        "--kubeconfig=/nonexistent",
        "--cluster-name=burn-test",
        "--storm=off",
        "--recovery-stable-for=0",
        "--access-recheck=0",
        `--daemon-url=${daemon.baseUrl}`,
        "--token-env=WATCHER_TOKEN",
        `--owner=${OWNER}`,
        `--sources=${sources}`,
        ...extra,
      ]);
      if (!parsed.ok) throw new Error(parsed.error);
      return startWatcher(
        parsed.value,
        createLogger("info", (line) => lines.push(line)),
        {
          connection: { server: api.url, tls: {}, token: () => undefined },
          stdout: (text) => printed.push(text),
          env: ENV,
        },
      );
    };
    if ((await turns("a")) === 0) await round(); // run alone: a must have spent something
    const auto = await start("auto");
    await auto.stop();
    expect(lines.join("\n")).not.toContain("source token-burn");
    expect(lines.join("\n")).toContain("token-burn stay explicit-only");
    // a has spent well over a cent: over a $0.01 budget, critical on the second poll.
    const named = await start("cluster-events,token-burn", ["--token-poll=100ms", "--token-budget-usd=0.01"]);
    try {
      expect(lines.some((line) => line.includes("INFO  source token-burn: enabled\n"))).toBe(true);
      await waitFor(() => (named.ready() ? true : undefined), 5000, "ready (the first poll answered)");
      const page = await waitFor(
        () => printed.find((text) => text.includes('"kind": "token.burn"') && text.includes("session:spar/a")),
        10_000,
        "the budget page",
      );
      expect(page).toContain('"reason": "token_budget"');
      expect(page).toContain('"uid": "session:spar/a"');
      expect(page).toContain('"kind_of_object": "Session"');
      expect(page).toContain('"severity": "critical"');
      expect(page).toContain("over its $0.01 budget");
    } finally {
      await named.stop();
    }
  }, 30_000);
});

describe("an answer that is not the daemon's", () => {
  let stub: ReturnType<typeof Bun.serve>;
  let answer: () => Response | Promise<Response> = () => new Response("{}");
  beforeAll(() => {
    stub = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => answer() });
  });
  afterAll(() => stub.stop(true));

  test("not JSON, no session list, sessions of the wrong shape, malformed usage, an oversized body: logged, never a crash", async () => {
    const odd = runner([`--token-endpoint=http://127.0.0.1:${stub.port}`]);
    await odd.source.start();
    try {
      answer = () => new Response("<html>not json</html>");
      await odd.poll(0);
      expect(odd.source.lastError).toBe("GET /sessions: the answer is not JSON");
      for (const body of [{ sessions: 5 }, null, [1, 2]]) {
        answer = () => Response.json(body);
        await odd.poll(1);
        expect(odd.source.lastError).toBe("GET /sessions: the answer has no sessions list");
      }
      answer = () => new Response("x".repeat(5 * 1024 * 1024));
      await odd.poll(1);
      expect(odd.source.lastError).toContain("larger than");
      expect(odd.lines.filter((line) => line.includes("poll failed"))).toHaveLength(1);
      // A list of odd rows, each session's usage malformed: answered, nothing judged.
      answer = () =>
        Response.json({
          sessions: [null, 3, { app: "spar", sessionID: "x", status: "active" }, { app: 1, status: "active" }],
          overall: "no",
        });
      await odd.poll(1);
      await odd.poll(1);
      expect(odd.source.lastError).toBeUndefined();
      expect(odd.source.synced).toBe(true);
      expect(odd.lines.some((line) => line.includes("the daemon answers again"))).toBe(true);
      expect(odd.signals).toEqual([]);
    } finally {
      await odd.source.stop();
    }
  });

  test("a daemon that never answers does not hold stop (the request is aborted, well before its 10 s deadline)", async () => {
    answer = () => new Promise<Response>(() => {});
    const hung = runner([`--token-endpoint=http://127.0.0.1:${stub.port}`]);
    await hung.source.start();
    const polling = hung.poll(0);
    await hung.source.stop();
    await polling;
    expect(hung.signals).toEqual([]);
  }, 5000);
});

test("with no --token-endpoint and no --daemon-url it says once that it polls nothing, and holds no readiness (D405)", async () => {
  const parsed = watcherConfigFromArgv(["--dry-run", "--sources=token-burn"]);
  if (!parsed.ok) throw new Error(parsed.error);
  const lines: string[] = [];
  const source = SOURCE_RUNNERS["token-burn"]?.({
    values: parsed.value.values,
    env: {},
    connection: { server: "http://127.0.0.1:9", tls: {}, token: () => undefined },
    without: new Set(),
    emit: () => {},
    logger: createLogger("info", (line) => lines.push(line)),
    onRestart: () => {},
  });
  await source?.start();
  await source?.stop();
  expect(source?.synced).toBe(true);
  expect(lines.filter((line) => line.includes("source token-burn"))).toHaveLength(1);
  expect(lines[0]).toContain(
    "source token-burn: no --token-endpoint or --daemon-url: it polls nothing and will emit nothing (D405)",
  );
});
