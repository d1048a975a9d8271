/**
 * The `alert` tool on a real `spar agent` (D460-D463) against a local webhook receiver
 * (Bun.serve on 127.0.0.1: an operator-configured target URL reaches loopback through the
 * outbound guard with its own host opened). Covered: one alert delivered once with the generic
 * body; the eleventh alert to one target within a minute refused with the time to retry; an
 * unknown target (an error naming the known ones); a receiver failing twice then succeeding
 * (retried with the same idempotency key, delivered once); a target whose URL variable is unset
 * (dropped with one stderr line, and with no target left the tool is absent, also said); a
 * variable holding no http(s) URL (a startup error that names the variable, not its value).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { daemonScope, runToExit } from "../../support/daemon-scope.ts";
import { type Daemon, postJson, sparCommand, tempDir } from "../../support/daemon.ts";
import { call, say, toolResults, writeScript } from "../../support/scripted.ts";
import { type Collector, collect } from "../../support/sse-client.ts";

interface Received {
  path: string;
  body: unknown;
  contentType: string | null;
  idempotencyKey: string | null;
}

const scope = daemonScope({ per: "file" });
const received: Received[] = [];
let flakyCalls = 0;
let receiver: ReturnType<typeof Bun.serve>;
let agent: { daemon: Daemon; events: Collector };

const DETAILS = { namespace: "prod", name: "web-1", uid: "u-1", reason: "CrashLoopBackOff", status: "UNRESOLVED" };
const BURST = 11;

function configFile(targets: readonly Record<string, unknown>[]): string {
  const path = join(tempDir(), "config.json");
  writeFileSync(path, JSON.stringify({ alerts: { targets } }));
  return path;
}

/** Inject into the default session; the results of that turn's tool calls. */
async function turn(count: number) {
  const from = agent.events.frames.length;
  const before = toolResults(agent.events).length;
  expect((await postJson(`${agent.daemon.baseUrl}/sessions/default/inject`, { message: "go" })).status).toBe(200);
  await agent.events.waitFor((frame) => frame.event === "turn-complete", 30_000, from);
  return toolResults(agent.events)
    .slice(before, before + count)
    .map((result) => result.response as Record<string, unknown>);
}

beforeAll(async () => {
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      const entry: Received = {
        path,
        body: await request.json(),
        contentType: request.headers.get("content-type"),
        idempotencyKey: request.headers.get("idempotency-key"),
      };
      received.push(entry);
      if (path === "/flaky" && ++flakyCalls <= 2) return new Response("busy", { status: 503 });
      return Response.json({ ok: true });
    },
  });
  const base = `http://127.0.0.1:${receiver.port}`;
  const config = configFile([
    { name: "oncall", url_env: "ONCALL_WEBHOOK_URL", template: "generic", description: "Page the on-call SRE" },
    { name: "burst", url_env: "BURST_WEBHOOK_URL", description: "rate-limit target" },
    { name: "flaky", url_env: "FLAKY_WEBHOOK_URL", description: "a receiver that fails twice" },
    { name: "ghost", url_env: "SPAR_TEST_UNSET_ALERT_URL", description: "never configured" },
  ]);
  const lines = [
    call("alert", { target: "oncall", level: "critical", summary: "web-1 crash-looping", details: DETAILS }),
    say("paged"),
    ...Array.from({ length: BURST }, (_, index) =>
      call("alert", { target: "burst", level: "warning", summary: `burst ${index + 1}` }),
    ),
    say("burst done"),
    call("alert", { target: "pager-of-doom", level: "critical", summary: "who?" }),
    say("unknown done"),
    call("alert", { target: "flaky", level: "critical", summary: "retry me" }),
    say("flaky done"),
  ];
  const daemon = await scope.start({
    args: ["--model=scripted", `--script=${writeScript(lines)}`, "--permission-mode=yolo", `--config=${config}`],
    env: {
      ONCALL_WEBHOOK_URL: `${base}/oncall`,
      BURST_WEBHOOK_URL: `${base}/burst`,
      FLAKY_WEBHOOK_URL: `${base}/flaky`,
      SPAR_TEST_UNSET_ALERT_URL: undefined,
    },
  });
  const events = scope.defer(collect(`${daemon.baseUrl}/sessions/default/events`), (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  agent = { daemon, events };
}, 60_000);

afterAll(async () => {
  await scope.close();
  receiver.stop(true);
});

describe("alert against a local receiver", () => {
  test("a target whose URL variable is unset is dropped with one stderr line; the others are offered by name", async () => {
    const dropped = agent.daemon
      .log()
      .split("\n")
      .filter((line) => line.includes("alerts: target ghost dropped"));
    expect(dropped).toHaveLength(1);
    expect(dropped[0]).toContain("SPAR_TEST_UNSET_ALERT_URL is not set");
    const tools = (await (await fetch(`${agent.daemon.baseUrl}/sessions/default/tools`)).json()) as {
      tools: Array<{ name: string; description: string }>;
    };
    const alert = tools.tools.find((tool) => tool.name === "alert");
    expect(alert?.description).toContain("oncall (Page the on-call SRE)");
    expect(alert?.description).not.toContain("ghost");
    expect(alert?.description).not.toContain(String(receiver.port));
  });

  test("one alert is delivered once with the generic body, its outcome the call's result row", async () => {
    const [result] = await turn(1);
    expect(result).toMatchObject({ target: "oncall", outcome: "delivered", status_code: 200, attempts: 1 });
    expect(JSON.stringify(result)).not.toContain(String(receiver.port));
    const delivered = received.filter((entry) => entry.path === "/oncall");
    expect(delivered).toHaveLength(1);
    expect(delivered[0]?.body).toEqual({ level: "critical", summary: "web-1 crash-looping", details: DETAILS });
    expect(delivered[0]?.contentType).toBe("application/json");
    expect(delivered[0]?.idempotencyKey).toBe(String(result?.alert_id));
  });

  test("the eleventh alert to one target within a minute is refused and says when to retry", async () => {
    const results = await turn(BURST);
    expect(results).toHaveLength(BURST);
    expect(results.slice(0, 10).every((result) => result.outcome === "delivered")).toBe(true);
    const refused = results[10] as Record<string, unknown>;
    expect(refused).toMatchObject({ target: "burst", outcome: "rate_limited" });
    const wait = Number(refused.retry_after_seconds);
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(6);
    expect(String(refused.error)).toContain(`retry in ${wait} s`);
    expect(String(refused.error)).toContain("10/min");
    expect(received.filter((entry) => entry.path === "/burst")).toHaveLength(10);
    expect(agent.daemon.log()).toContain("alerts: not sent: target burst is rate limited");
  });

  test("an unknown target is an error result naming the known ones; nothing is sent", async () => {
    const count = received.length;
    const [result] = await turn(1);
    expect(String(result?.error)).toContain('no alert target "pager-of-doom"');
    expect(String(result?.error)).toContain("known: oncall, burst, flaky");
    expect(received.length).toBe(count);
  });

  test("a receiver failing twice then succeeding: retried with one idempotency key, delivered once", async () => {
    const [result] = await turn(1);
    expect(result).toMatchObject({ target: "flaky", outcome: "delivered", status_code: 200, attempts: 3 });
    const attempts = received.filter((entry) => entry.path === "/flaky");
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((entry) => entry.idempotencyKey))).toEqual(new Set([String(result?.alert_id)]));
    expect(flakyCalls).toBe(3);
  }, 30_000);
});

test("with the only target's URL variable unset the alert tool is absent, and stderr says so", async () => {
  const config = configFile([{ name: "oncall", url_env: "SPAR_TEST_UNSET_ONCALL_URL", template: "generic" }]);
  const daemon = await scope.start({
    args: [`--config=${config}`],
    env: { SPAR_TEST_UNSET_ONCALL_URL: undefined },
  });
  const log = daemon.log();
  expect(log).toContain("alerts: target oncall dropped: the variable SPAR_TEST_UNSET_ONCALL_URL is not set");
  expect(log).toContain("alerts: no alert target remains");
  const tools = (await (await fetch(`${daemon.baseUrl}/sessions/default/tools`)).json()) as {
    tools: Array<{ name: string }>;
  };
  expect(tools.tools.map((tool) => tool.name)).not.toContain("alert");
  expect(tools.tools.length).toBeGreaterThan(0);
});

test("a URL variable that holds no http(s) URL stops the start, naming the variable and not its value", async () => {
  const config = configFile([{ name: "oncall", url_env: "SPAR_TEST_BAD_ONCALL_URL" }]);
  const exit = await runToExit(
    sparCommand("agent", "--attach-listen=127.0.0.1:0", `--session-db=${tempDir()}/s.db`, `--config=${config}`),
    { env: { SPAR_TEST_BAD_ONCALL_URL: "ftp://secret-host/hook" }, timeoutMs: 20_000 },
  );
  expect(exit.code).not.toBe(0);
  expect(exit.stderr).toContain("the variable SPAR_TEST_BAD_ONCALL_URL does not hold an absolute http or https URL");
  expect(exit.stderr).not.toContain("secret-host");
});
