/**
 * call_peer between two real `spar agent` daemons (D364-D366): B is multi-session behind a
 * bearer and serves the peer hub it is registered in; A looks B up there by name, opens a fresh
 * session, subscribes, injects and reads B's turn to its end. Covered: the bearer from the
 * environment, the byte cap (truncated), an unknown peer (the known names in the error), a
 * single-session peer (501), one trace across both daemons in a local OTLP receiver, the one
 * deadline over a peer that stalls, and an unset token variable (a startup error).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SpanKind } from "@opentelemetry/api";
import { daemonScope, runToExit } from "../../support/daemon-scope.ts";
import { type Daemon, postJson, sparCommand, tempDir, waitFor } from "../../support/daemon.ts";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../../support/otlp-receiver.ts";
import { call, say, stall, toolResults, writeScript } from "../../support/scripted.ts";
import { type Collector, collect } from "../../support/sse-client.ts";

const CLIENT = SpanKind.CLIENT + 1;
const SERVER = SpanKind.SERVER + 1;
const SECRET = "peer-bearer-7f3a";
const TRACE_ID = "c0ffeec0ffeec0ffeec0ffeec0ffee01";

const scope = daemonScope({ per: "file" });
let receiver: OtlpReceiver;
let peerB: Daemon;
let callerA: { daemon: Daemon; events: Collector };

function exporting(): Record<string, string> {
  return { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "50", OTEL_METRICS_EXPORTER: "none" };
}

const bearer = { authorization: `Bearer ${SECRET}` };

/** A calling daemon whose model runs `lines`, with call_peer against B's hub. */
async function caller(lines: readonly unknown[], args: string[] = []) {
  const daemon = await scope.start({
    args: [
      "--model=scripted",
      `--script=${writeScript(lines)}`,
      "--permission-mode=yolo",
      "--call-peer",
      `--call-peer-hub=${peerB.baseUrl}`,
      "--call-peer-token-env=PEER_TOKEN",
      "--outbound-allow=127.0.0.1",
      ...args,
    ],
    env: { PEER_TOKEN: SECRET, ...exporting() },
  });
  const events = scope.defer(collect(`${daemon.baseUrl}/sessions/default/events`), (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  return { daemon, events };
}

/** Inject into A's default session and return the call_peer result of the turn (the n-th of the stream). */
async function callResult(events: Collector, daemon: Daemon, index: number, headers: Record<string, string> = {}) {
  const from = events.frames.length;
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "go" }, headers)).status).toBe(200);
  await events.waitFor((frame) => frame.event === "turn-complete", 30_000, from);
  return toolResults(events)[index]?.response as Record<string, unknown>;
}

beforeAll(async () => {
  receiver = startOtlpReceiver();
  peerB = await scope.start({
    args: [
      "--model=scripted",
      `--script=${writeScript([say("peer says hello"), say("x".repeat(5000)), say("traced answer"), stall("peer thinking", 120_000)])}`,
      "--multi-session",
      "--attach-token=PEER_TOKEN",
      "--attach-peer-hub",
    ],
    env: { PEER_TOKEN: SECRET, ...exporting() },
  });
  const registered = await postJson(`${peerB.baseUrl}/peers`, { name: "peer-b", endpoint: peerB.baseUrl }, bearer);
  expect(registered.status).toBe(201);
  callerA = await caller(
    [
      call("call_peer", { peer: "peer-b", prompt: "say hello" }),
      say("done 1"),
      call("call_peer", { peer: "peer-b", prompt: "write a lot" }),
      say("done 2"),
      call("call_peer", { peer: "nobody", prompt: "hello?" }),
      say("done 3"),
      call("call_peer", { peer: "single", prompt: "hello?" }),
      say("done 4"),
      call("call_peer", { peer: "peer-b", prompt: "traced" }),
      say("done 5"),
    ],
    ["--call-peer-max-response-bytes=1000"],
  );
}, 60_000);

afterAll(async () => {
  await scope.close();
  await receiver.stop();
});

describe("call_peer from A to B through B's hub", () => {
  test("the bearer from the environment reaches B: a fresh session, its answer and session id come back", async () => {
    const tools = (await (await fetch(`${callerA.daemon.baseUrl}/sessions/default/tools`)).json()) as {
      tools: Array<{ name: string; source?: string }>;
    };
    expect(tools.tools.find((tool) => tool.name === "call_peer")).toBeDefined();
    const result = await callResult(callerA.events, callerA.daemon, 0);
    expect(result).toMatchObject({ peer: "peer-b", text: "peer says hello", truncated: false });
    const sessionId = String(result.session_id);
    const listed = (await (await fetch(`${peerB.baseUrl}/sessions`, { headers: bearer })).json()) as {
      sessions: Array<{ sessionID: string }>;
    };
    expect(listed.sessions.map((row) => row.sessionID)).toContain(sessionId);
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });

  test("max_response_bytes caps the answer and sets truncated", async () => {
    const result = await callResult(callerA.events, callerA.daemon, 1);
    expect(result).toMatchObject({ peer: "peer-b", truncated: true });
    expect(String(result.text)).toBe("x".repeat(1000));
  });

  test("an unknown peer is an error result naming the known ones", async () => {
    const result = await callResult(callerA.events, callerA.daemon, 2);
    expect(String(result.error)).toContain('no peer "nobody"');
    expect(String(result.error)).toContain("known: peer-b");
  });

  test("a single-session peer answers POST /sessions 501: an error result saying so", async () => {
    const single = await scope.start({ args: ["--attach-token=PEER_TOKEN"], env: { PEER_TOKEN: SECRET } });
    expect(
      (await postJson(`${peerB.baseUrl}/peers`, { name: "single", endpoint: single.baseUrl }, bearer)).status,
    ).toBe(201);
    const result = await callResult(callerA.events, callerA.daemon, 3);
    expect(result).toMatchObject({ peer: "single", status: 501 });
    expect(String(result.error)).toContain("not multi-session");
  });

  test("one trace across both daemons: B's server spans are children of A's client spans, in the injecting request's trace", async () => {
    const traceparent = `00-${TRACE_ID}-${"2".repeat(16)}-01`;
    const result = await callResult(callerA.events, callerA.daemon, 4, { traceparent });
    expect(result).toMatchObject({ peer: "peer-b", text: "traced answer" });
    const port = Number(new URL(peerB.baseUrl).port);
    const clientsOf = (all: ReceivedSpan[]) =>
      all.filter(
        (span) => span.kind === CLIENT && span.traceId === TRACE_ID && span.attributes["server.port"] === port,
      );
    const children = (all: ReceivedSpan[]) =>
      all.filter(
        (span) => span.kind === SERVER && clientsOf(all).some((client) => client.spanId === span.parentSpanId),
      );
    // GET /peers, POST /sessions, GET events, POST inject: each answered by B under A's span.
    const spans = await receiver.waitForSpans((all) => children(all).length >= 4, 20_000);
    expect(new Set(children(spans).map((span) => span.traceId))).toEqual(new Set([TRACE_ID]));
    expect(clientsOf(spans).map((span) => span.name)).toEqual(expect.arrayContaining(["GET", "POST"]));
    expect(JSON.stringify(spans)).not.toContain(SECRET);
  }, 30_000);

  test("the deadline: a peer that stalls ends the call after timeout_seconds with the peer's session id", async () => {
    const hasty = await caller(
      [call("call_peer", { peer: "peer-b", prompt: "take your time" }), say("gave up")],
      ["--call-peer-timeout-seconds=2"],
    );
    const started = Date.now();
    const result = await callResult(hasty.events, hasty.daemon, 0);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(result).toMatchObject({ peer: "peer-b", error: "no answer within 2 s (timeout_seconds)" });
    const sessionId = String(result.session_id);
    // The deadline interrupts the peer's turn: its session goes idle long before the model's 120 s.
    await waitFor(
      async () => {
        const status = (await (
          await fetch(`${peerB.baseUrl}/sessions/${sessionId}/status`, { headers: bearer })
        ).json()) as {
          turn_in_flight?: boolean;
        };
        return status.turn_in_flight === false ? true : undefined;
      },
      15_000,
      "the peer's turn interrupted",
    );
  }, 40_000);
});

test("a token variable named but unset is a startup error naming it", async () => {
  const exit = await runToExit(
    sparCommand(
      "agent",
      "--attach-listen=127.0.0.1:0",
      `--session-db=${tempDir()}/s.db`,
      "--call-peer",
      "--attach-peer-hub",
      "--call-peer-token-env=SPAR_TEST_UNSET_PEER_TOKEN",
    ),
    { env: { SPAR_TEST_UNSET_PEER_TOKEN: undefined }, timeoutMs: 20_000 },
  );
  expect(exit.code).not.toBe(0);
  expect(exit.stderr).toContain("SPAR_TEST_UNSET_PEER_TOKEN");
  expect(exit.stderr).toContain("not set");
});
