/**
 * A turn's spans, from the real daemon to a local OTLP receiver (D301): the request that queued a
 * prompt is the parent of the turn that drains it (`invoke_agent`), even when that turn runs on
 * the next daemon after a restart (the context is stored with the prompt); each model call is a
 * `chat` span the turn worker names (D324) and the main thread records, and the worker's provider
 * request (the OpenAI wire fake records it) carries that span's context; a call that fails is a
 * failed `chat` span under the same id; each tool call is an `execute_tool` span with the
 * permission gate's answer.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { startProviderFake } from "../../fakes/providers/provider-fake.ts";
import { postJson, tempDir } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../../support/otlp-receiver.ts";
import { call, say, writeScript } from "../../support/scripted.ts";
import { collect } from "../../support/sse-client.ts";

const scope = daemonScope();
let receiver: OtlpReceiver;
beforeAll(() => {
  receiver = startOtlpReceiver();
});
afterAll(async () => receiver.stop());

const exporting = () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "50" });
const inTrace = (traceId: string) => receiver.spans.filter((span) => span.traceId === traceId);
const named = (spans: ReceivedSpan[], prefix: string) => spans.filter((span) => span.name.startsWith(prefix));

test("(a, worker boundary) inject -> turn -> two model calls and a tool call form one tree; the provider request carries its chat span", async () => {
  const key = "otel-provider-key";
  const fake = scope.defer(startProviderFake("openai", { apiKey: key, models: ["gpt-4o-mini"] }), (served) =>
    served.stop(),
  );
  fake.enqueue("tool-call", "text");
  const daemon = await scope.start({
    args: [
      "--provider=openai",
      "--model=gpt-4o-mini",
      `--model-base-url=${fake.baseUrl}`,
      "--permission-mode=yolo",
      "--workers=1",
    ],
    env: { OPENAI_API_KEY: key, ...exporting() },
  });
  const events = scope.defer(collect(`${daemon.baseUrl}/sessions/default/events`), (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
  const answer = await postJson(
    `${daemon.baseUrl}/sessions/default/inject`,
    { message: "read the readme" },
    { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, tracestate: "vendor=abc" },
  );
  expect(answer.status).toBe(200);
  await events.waitFor((frame) => frame.event === "turn-complete", 20_000);
  const spans = await receiver.waitForSpans(
    () => named(inTrace(traceId), "chat").length === 2 && named(inTrace(traceId), "invoke_agent").length === 1,
  );
  const trace = spans.filter((span) => span.traceId === traceId);
  const [server] = named(trace, "POST /sessions");
  const [turn] = named(trace, "invoke_agent");
  const chats = named(trace, "chat gpt-4o-mini");
  const [tool] = named(trace, "execute_tool read_file");
  expect(server?.parentSpanId).toBe("00f067aa0ba902b7");
  expect(turn?.parentSpanId).toBe(server?.spanId ?? "?");
  expect(turn?.attributes).toMatchObject({
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.conversation.id": "default",
    "spar.turn.kind": "prompt",
    "spar.turn.outcome": "completed",
  });
  expect(chats).toHaveLength(2);
  for (const chat of chats) {
    expect(chat.parentSpanId).toBe(turn?.spanId ?? "?");
    expect(chat.attributes).toMatchObject({ "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini" });
    expect(chat.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
  }
  expect(tool?.parentSpanId).toBe(turn?.spanId ?? "?");
  expect(tool?.attributes).toMatchObject({ "gen_ai.tool.name": "read_file", "spar.permission.outcome": "allowed" });
  // The turn's rows committed under its spans: group commits are children of the turn's work.
  const commits = named(trace, "COMMIT");
  expect(commits.length).toBeGreaterThan(0);
  const inTurn = new Set([turn?.spanId, tool?.spanId, ...chats.map((chat) => chat.spanId)]);
  for (const commit of commits) {
    expect(inTurn.has(commit.parentSpanId) || commit.parentSpanId === server?.spanId).toBe(true);
    expect(commit.attributes["db.system.name"]).toBe("sqlite");
    expect(commit.attributes["spar.store.rows"]).toBeGreaterThan(0);
  }
  expect(commits.some((commit) => commit.parentSpanId === turn?.spanId)).toBe(true);
  // The worker's provider requests carried the chat spans' contexts: the context crossed the thread.
  const carried = fake.requests.map((request) => request.headers.traceparent);
  expect(carried.sort()).toEqual(chats.map((chat) => `00-${traceId}-${chat.spanId}-01`).sort());
  // The inbound tracestate went along: stored with the prompt, through the turn, to the provider.
  expect(fake.requests.map((request) => request.headers.tracestate)).toEqual(["vendor=abc", "vendor=abc"]);
});

test("(a, restart) a prompt queued before a restart is the parent of the turn that drains it on the next daemon", async () => {
  const sessionDb = join(tempDir(), "sessions.db");
  const options = (lines: unknown[]) => ({
    sessionDb,
    args: ["--model=scripted", `--script=${writeScript(lines)}`],
    env: exporting(),
  });
  const first = await scope.start(options([]));
  const traceId = "5bf92f3577b34da6a3ce929d0e0e4737";
  const queued = await postJson(
    `${first.baseUrl}/sessions/default/inject`,
    { message: "later, please", wake: false },
    { traceparent: `00-${traceId}-10f067aa0ba902b7-01` },
  );
  expect(queued.status).toBe(200);
  expect(await first.sigterm()).toBe(0);
  const [queuing] = await receiver
    .waitForSpans(() => named(inTrace(traceId), "POST /sessions").length > 0)
    .then(() => named(inTrace(traceId), "POST /sessions"));
  const second = await scope.start(options([say("done")]));
  const events = scope.defer(collect(`${second.baseUrl}/sessions/default/events`), (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  // The wake comes from another trace: the turn still belongs to the request that queued its prompt.
  await postJson(
    `${second.baseUrl}/sessions/default/wake`,
    {},
    { traceparent: `00-${"6".repeat(32)}-20f067aa0ba902b7-01` },
  );
  await events.waitFor((frame) => frame.event === "turn-complete", 20_000);
  const spans = await receiver.waitForSpans(() => named(inTrace(traceId), "invoke_agent").length === 1);
  const turn = named(
    spans.filter((span) => span.traceId === traceId),
    "invoke_agent",
  )[0];
  expect(turn?.parentSpanId).toBe(queuing?.spanId ?? "?");
  expect(turn?.resource["service.instance.id"]).not.toBe(queuing?.resource["service.instance.id"]);
});

test("a model call the provider refuses is a failed chat span under the id its request carried", async () => {
  const key = "otel-refused-key";
  const fake = scope.defer(startProviderFake("openai", { apiKey: key, models: ["gpt-4o-mini"] }), (served) =>
    served.stop(),
  );
  fake.enqueue("401");
  const daemon = await scope.start({
    args: ["--provider=openai", "--model=gpt-4o-mini", `--model-base-url=${fake.baseUrl}`, "--workers=1"],
    env: { OPENAI_API_KEY: key, ...exporting() },
  });
  const events = scope.defer(collect(`${daemon.baseUrl}/sessions/default/events`), (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  const traceId = "8".repeat(32);
  await postJson(
    `${daemon.baseUrl}/sessions/default/inject`,
    { message: "hi" },
    { traceparent: `00-${traceId}-40f067aa0ba902b7-01` },
  );
  await events.waitFor((frame) => frame.event === "turn-error", 20_000);
  const spans = await receiver.waitForSpans(
    () => named(inTrace(traceId), "chat").length === 1 && named(inTrace(traceId), "invoke_agent").length === 1,
  );
  const trace = spans.filter((span) => span.traceId === traceId);
  const [turn] = named(trace, "invoke_agent");
  const [chat] = named(trace, "chat gpt-4o-mini");
  expect(chat?.parentSpanId).toBe(turn?.spanId ?? "?");
  expect(chat?.statusCode).toBe(2);
  expect(chat?.attributes["error.type"]).toBe("model_call_failed");
  expect(chat?.durationMs).toBeGreaterThanOrEqual(0);
  expect(chat?.durationMs).toBeLessThanOrEqual(turn?.durationMs ?? 0);
  expect(turn?.statusCode).toBe(2);
  // The refused request carried the span the call is recorded under.
  expect(fake.requests.map((request) => request.headers.traceparent)).toContain(
    `00-${traceId}-${chat?.spanId ?? "?"}-01`,
  );
});

test("with telemetry off, the provider request carries no traceparent", async () => {
  const key = "otel-off-key";
  const fake = scope.defer(startProviderFake("openai", { apiKey: key, models: ["gpt-4o-mini"] }), (served) =>
    served.stop(),
  );
  fake.enqueue("text");
  const daemon = await scope.start({
    args: ["--provider=openai", "--model=gpt-4o-mini", `--model-base-url=${fake.baseUrl}`],
    env: { OPENAI_API_KEY: key },
  });
  const events = scope.defer(collect(`${daemon.baseUrl}/sessions/default/events`), (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  await postJson(
    `${daemon.baseUrl}/sessions/default/inject`,
    { message: "hi" },
    { traceparent: `00-${"7".repeat(32)}-30f067aa0ba902b7-01` },
  );
  await events.waitFor((frame) => frame.event === "turn-complete", 20_000);
  expect(fake.requests).toHaveLength(1);
  expect(fake.requests[0]?.headers.traceparent).toBeUndefined();
});

test("turn duration and model-call token histograms reach the receiver as OTLP histograms", async () => {
  const daemon = await scope.start({
    args: ["--model=scripted", `--script=${writeScript([say("counted")])}`],
    env: { ...exporting(), OTEL_METRIC_EXPORT_INTERVAL: "200", OTEL_SERVICE_NAME: "histogram-probe" },
  });
  const events = scope.defer(collect(`${daemon.baseUrl}/sessions/default/events`), (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "count me" });
  await events.waitFor((frame) => frame.event === "turn-complete", 20_000);
  const probe = (name: string) =>
    receiver.metrics.find(
      (metric) =>
        metric.name === name && metric.resource["service.name"] === "histogram-probe" && metric.points.length > 0,
    );
  await receiver.waitForMetrics(
    () => probe("spar.turn.duration") !== undefined && probe("gen_ai.client.token.usage") !== undefined,
  );
  const turns = probe("spar.turn.duration");
  expect(turns?.type).toBe("histogram");
  expect(turns?.points[0]?.attributes).toMatchObject({ "spar.turn.outcome": "completed" });
  const tokens = probe("gen_ai.client.token.usage");
  expect(tokens?.type).toBe("histogram");
  expect(tokens?.points.map((point) => point.attributes["gen_ai.token.type"]).sort()).toEqual(["input", "output"]);
  expect(tokens?.points[0]?.attributes).toMatchObject({
    "gen_ai.provider.name": "scripted",
    "gen_ai.request.model": "scripted",
  });
});

test("fetch_url, run in the tool-host worker, sends the traceparent of its execute_tool span", async () => {
  const seen: Array<string | null> = [];
  const local = scope.defer(
    Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (request) => {
        seen.push(request.headers.get("traceparent"));
        return new Response("traced page");
      },
    }),
    (server) => server.stop(true),
  );
  const page = `http://127.0.0.1:${local.port}/page`;
  const daemon = await scope.start({
    args: [
      "--model=scripted",
      `--script=${writeScript([call("fetch_url", { url: page }), say("read it")])}`,
      "--permission-mode=yolo",
      "--outbound-allow=127.0.0.1",
    ],
    env: exporting(),
  });
  const events = scope.defer(collect(`${daemon.baseUrl}/sessions/default/events`), (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  const traceId = "abf92f3577b34da6a3ce929d0e0e473a";
  await postJson(
    `${daemon.baseUrl}/sessions/default/inject`,
    { message: "fetch it" },
    { traceparent: `00-${traceId}-60f067aa0ba902b7-01` },
  );
  await events.waitFor((frame) => frame.event === "turn-complete", 20_000);
  const spans = await receiver.waitForSpans(() => named(inTrace(traceId), "execute_tool fetch_url").length === 1);
  const tool = named(
    spans.filter((span) => span.traceId === traceId),
    "execute_tool fetch_url",
  )[0];
  expect(seen).toEqual([`00-${traceId}-${tool?.spanId}-01`]);
});
