/**
 * The caller's W3C baggage reaches an A2A agent through `call_a2a` (D321, D341), received on a
 * local A2A server (the SDK's own, test/fixtures/a2a): the request that queues a prompt keeps its
 * baggage with the prompt, so the turn that drains it (live, or on the next daemon after a
 * restart) sends it with the call, in the same trace; a wake from another request with other
 * baggage does not replace it. It used to stop at the inbox: the turn kept the ids alone.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type EchoAgent, startEchoAgent } from "../../fixtures/a2a/sdk-echo-agent.ts";
import { postJson, tempDir } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { type OtlpReceiver, startOtlpReceiver } from "../../support/otlp-receiver.ts";
import { call, say, writeScript } from "../../support/scripted.ts";
import { collect } from "../../support/sse-client.ts";

const scope = daemonScope();
let receiver: OtlpReceiver;
beforeAll(() => {
  receiver = startOtlpReceiver();
});
afterAll(async () => receiver.stop());

const exporting = () => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_BSP_SCHEDULE_DELAY: "50",
  OTEL_METRICS_EXPORTER: "none",
});

/** A project whose `.agents/a2a/echo.yaml` declares `echo`, and the script that calls it once. */
function project(echo: EchoAgent): { cwd: string; script: string } {
  const cwd = tempDir("spar-baggage-");
  mkdirSync(join(cwd, ".agents", "a2a"), { recursive: true });
  writeFileSync(
    join(cwd, ".agents", "a2a", "echo.yaml"),
    ["name: echo", `agent_card_url: ${echo.cardUrl}`, "timeout_seconds: 10", ""].join("\n"),
  );
  return { cwd, script: writeScript([call("call_a2a", { agent: "echo", message: "hello" }), say("done")]) };
}

test("an inject's baggage is on the call_a2a request the turn makes, with the inject's trace id", async () => {
  const echo = scope.defer(startEchoAgent(), (agent) => agent.stop());
  const { cwd, script } = project(echo);
  const agent = await scope.start({
    args: ["--model=scripted", `--script=${script}`, "--permission-mode=yolo"],
    cwd,
    env: exporting(),
  });
  const events = scope.defer(collect(`${agent.baseUrl}/sessions/default/events`), (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  const traceId = "b0a6b0a6b0a6b0a6b0a6b0a6b0a6b0a6";
  const injected = await postJson(
    `${agent.baseUrl}/sessions/default/inject`,
    { message: "ask echo" },
    { traceparent: `00-${traceId}-${"1".repeat(16)}-01`, baggage: "tenant=acme,user=alice" },
  );
  expect(injected.status).toBe(200);
  await events.waitFor((frame) => frame.event === "turn-complete");
  expect(echo.traceHeaders.length).toBeGreaterThan(0);
  for (const headers of echo.traceHeaders) {
    expect(headers.baggage).toBe("tenant=acme,user=alice");
    expect(headers.traceparent).toContain(traceId);
  }
});

test("a prompt queued before a restart sends its request's baggage from the next daemon, not the wake's", async () => {
  const echo = scope.defer(startEchoAgent(), (agent) => agent.stop());
  const { cwd, script } = project(echo);
  const sessionDb = join(tempDir(), "sessions.db");
  const first = await scope.start({
    sessionDb,
    args: ["--model=scripted", `--script=${writeScript([])}`],
    cwd,
    env: exporting(),
  });
  const queued = await postJson(
    `${first.baseUrl}/sessions/default/inject`,
    { message: "later, ask echo", wake: false },
    { traceparent: `00-${"c".repeat(32)}-${"2".repeat(16)}-01`, baggage: "tenant=acme" },
  );
  expect(queued.status).toBe(200);
  expect(await first.sigterm()).toBe(0);

  const second = await scope.start({
    sessionDb,
    args: ["--model=scripted", `--script=${script}`, "--permission-mode=yolo"],
    cwd,
    env: exporting(),
  });
  const events = scope.defer(collect(`${second.baseUrl}/sessions/default/events`), (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  await postJson(
    `${second.baseUrl}/sessions/default/wake`,
    {},
    { traceparent: `00-${"d".repeat(32)}-${"3".repeat(16)}-01`, baggage: "tenant=mallory" },
  );
  await events.waitFor((frame) => frame.event === "turn-complete", 20_000);
  expect(echo.traceHeaders.map((headers) => headers.baggage)).toEqual(echo.traceHeaders.map(() => "tenant=acme"));
  expect(echo.traceHeaders.length).toBeGreaterThan(0);
});
