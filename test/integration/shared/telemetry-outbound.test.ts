/**
 * Traces across processes (issue 18 item 3, test b), real daemons exporting to one local OTLP
 * receiver: `spar agent`'s call_a2a to `spar svc --a2a-listen` is one trace, the svc's A2A server
 * spans children of the agent's client spans; a watcher process's incident delivered over its
 * daemon sink is one trace from the cluster event to the agent's /inject (`watcher event` ->
 * `watcher incident` (the enricher's API reads its children) -> `watcher sink open` -> POST client
 * span -> the agent's server span); with telemetry off the sink's requests carry no trace headers.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SpanKind } from "@opentelemetry/api";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { A2A_SECRET, startA2aDaemon } from "../../support/a2a-daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { postJson, tempDir, waitFor } from "../../support/daemon.ts";
import { spawnWatcher, watcherReady } from "../../support/watcher-process.ts";
import { writeKubeconfig } from "../../support/kube.ts";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../../support/otlp-receiver.ts";
import { call, say, writeScript } from "../../support/scripted.ts";
import { collect } from "../../support/sse-client.ts";
import { OWNER, WATCHER_ENV, triageAuthArgs } from "../../support/triage-daemon.ts";

const CLIENT = SpanKind.CLIENT + 1;
const SERVER = SpanKind.SERVER + 1;

const scope = daemonScope();
let receiver: OtlpReceiver;

beforeAll(() => {
  receiver = startOtlpReceiver();
});

afterAll(async () => {
  await receiver.stop();
});

function exporting(): Record<string, string> {
  return { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "50", OTEL_METRICS_EXPORTER: "none" };
}

const serviceOf = (span: ReceivedSpan | undefined) => span?.resource["service.name"];

function parentOf(span: ReceivedSpan | undefined): ReceivedSpan | undefined {
  return receiver.spans.find((candidate) => candidate.spanId === span?.parentSpanId && span?.parentSpanId !== "");
}

describe("(b) an A2A call from one spar process to another is one trace", () => {
  test("spar agent's call_a2a -> spar svc's A2A listener: each svc server span's parent is an agent client span", async () => {
    const svc = await startA2aDaemon(scope, [say("all replicas healthy")], { env: exporting() });
    const cwd = tempDir("spar-a2a-");
    mkdirSync(join(cwd, ".agents", "a2a"), { recursive: true });
    writeFileSync(
      join(cwd, ".agents", "a2a", "svc.yaml"),
      [
        "name: svc",
        `agent_card_url: ${svc.a2aUrl}/.well-known/agent-card.json`,
        "auth:",
        "  type: bearer",
        "  token_env: SVC_PEER_TOKEN",
        "timeout_seconds: 20",
        "",
      ].join("\n"),
    );
    const script = writeScript([call("call_a2a", { agent: "svc", message: "status of web?" }), say("done")]);
    const agent = await scope.start({
      args: ["--model=scripted", `--script=${script}`, "--permission-mode=yolo"],
      cwd,
      env: { SVC_PEER_TOKEN: A2A_SECRET, ...exporting() },
    });
    const events = scope.defer(collect(`${agent.baseUrl}/sessions/default/events`), (stream) => stream.close());
    await events.waitFor((frame) => frame.event === "usage-update");
    const traceId = "a2a0a2a0a2a0a2a0a2a0a2a0a2a0a2a0";
    const traceparent = `00-${traceId}-${"1".repeat(16)}-01`;
    expect(
      (await postJson(`${agent.baseUrl}/sessions/default/inject`, { message: "ask svc" }, { traceparent })).status,
    ).toBe(200);
    await events.waitFor((frame) => frame.event === "turn-complete");

    const a2aPort = Number(new URL(svc.a2aUrl).port);
    const agentClients = (all: ReceivedSpan[]) =>
      all.filter(
        (span) =>
          span.kind === CLIENT && serviceOf(span) === "spar-agent" && span.attributes["server.port"] === a2aPort,
      );
    const svcChildren = (all: ReceivedSpan[]) =>
      all.filter(
        (span) =>
          span.kind === SERVER &&
          serviceOf(span) === "spar-svc" &&
          agentClients(all).some((client) => client.spanId === span.parentSpanId),
      );
    // The card's GET and message/send's POST at least, each answered by the svc under the caller's span.
    const spans = await receiver.waitForSpans((all) => svcChildren(all).length >= 2);
    const clients = agentClients(spans);
    expect(clients.map((span) => span.name)).toEqual(expect.arrayContaining(["GET", "POST"]));
    for (const client of clients) {
      const server = spans.find((span) => span.parentSpanId === client.spanId);
      expect(server?.traceId).toBe(client.traceId);
      expect(serviceOf(server)).toBe("spar-svc");
      expect(client.attributes["url.full"]).toStartWith(svc.a2aUrl);
      expect(client.attributes["http.response.status_code"]).toBe(server?.attributes["http.response.status_code"]);
    }
    // On the agent's side the calls are children of the call_a2a tool call's span.
    const tools = new Set(clients.map((client) => parentOf(client)?.name));
    expect([...tools]).toEqual(["execute_tool call_a2a"]);
    // ... in the trace of the request that asked the agent: one trace from the inject into svc.
    expect(new Set(svcChildren(spans).map((span) => span.traceId))).toEqual(new Set([traceId]));
    // The bearer the agent sends the svc never reaches a span.
    expect(JSON.stringify(spans)).not.toContain(A2A_SECRET);
  }, 60_000);
});

describe("the watcher's incident is one trace into its sink: spar agent's daemon sink, or a webhook receiver", () => {
  let api: FakeApiserver;
  let kubeconfig: string;

  beforeAll(async () => {
    api = await startFakeApiserver({ tokens: { "kube-token": "system:serviceaccount:agent-triage:watcher" } });
    kubeconfig = writeKubeconfig(join(tempDir(), "kubeconfig"), { server: api.url, token: "kube-token" });
  });

  afterAll(async () => {
    await api.stop();
  });

  /**
   * A `spar watcher watch` process delivering to `sink` (the daemon sink's URL, or the webhook
   * sink's flags), exporting spans unless `traced` is false; resolves once it is ready, stopped
   * with the scope.
   */
  async function startWatcherProcess(sink: string | string[], traced = true) {
    const watcher = await spawnWatcher(
      [
        ...(typeof sink === "string"
          ? [`--daemon-url=${sink}`, "--token-env=WATCHER_TOKEN", `--owner=${OWNER}`]
          : sink),
        "--cluster-name=kind-test",
        `--kubeconfig=${kubeconfig}`,
        "--backoff-min-count=1",
        "--storm=off",
        ...(traced ? [`--otel-endpoint=${receiver.url}`] : []),
      ],
      { ...WATCHER_ENV, HOOK_TOKEN: "hook-secret", OTEL_BSP_SCHEDULE_DELAY: "50", OTEL_METRICS_EXPORTER: "none" },
    );
    scope.defer(watcher, (running) => running.stop());
    await watcherReady(watcher);
    return { log: () => watcher.stderr() };
  }

  function crashLoop(name: string): void {
    const pod = api.scenario.createPod({
      namespace: "checkout",
      name,
      node: "node-a",
      containers: [{ name: "app", image: "registry.example.com/app:v1", waitingReason: "CrashLoopBackOff" }],
    } as never);
    api.scenario.recordEvent({
      involvedObject: pod,
      reason: "BackOff",
      message: "Back-off restarting failed container app in pod",
      type: "Warning",
      source: { component: "kubelet", host: "node-a" },
      fieldPath: "spec.containers{app}",
    });
  }

  test("watcher event -> watcher incident -> watcher sink open -> POST -> the agent's /inject server span", async () => {
    const dir = tempDir();
    const agent = await scope.start({ args: triageAuthArgs(dir), env: { ...WATCHER_ENV, ...exporting() } });
    const watcher = await startWatcherProcess(agent.baseUrl);
    crashLoop("api-traced");
    const fired = await waitFor(
      () => /fire BackOff pod=checkout\/api-traced → sid=(\S+)/.exec(watcher.log())?.[1],
      15_000,
      "fire line",
    );
    const injectServer = (all: ReceivedSpan[]) =>
      all.find(
        (span) =>
          serviceOf(span) === "spar-agent" &&
          span.kind === SERVER &&
          span.attributes["url.path"] === `/sessions/${fired}/inject`,
      );
    await receiver.waitForSpans((all) => {
      const inject = injectServer(all);
      return inject !== undefined && all.some((span) => span.spanId === inject.parentSpanId);
    });
    const inject = injectServer(receiver.spans);
    const client = parentOf(inject);
    expect(client).toMatchObject({ kind: CLIENT, name: "POST", traceId: inject?.traceId });
    expect(serviceOf(client)).toBe("spar-watcher");
    expect(client?.attributes["url.full"]).toBe(`${agent.baseUrl}/sessions/${fired}/inject`);
    expect(client?.attributes["http.response.status_code"]).toBe(200);
    await receiver.waitForSpans((all) =>
      all.some((span) => span.name === "watcher event" && span.traceId === inject?.traceId),
    );
    const sink = parentOf(client);
    const incident = parentOf(sink);
    const event = parentOf(incident);
    expect([sink?.name, incident?.name, event?.name]).toEqual([
      "watcher sink open",
      "watcher incident",
      "watcher event",
    ]);
    expect(event?.parentSpanId).toBe("");
    expect(event?.attributes).toMatchObject({
      "k8s.cluster.name": "kind-test",
      "k8s.namespace.name": "checkout",
      "spar.watcher.object.name": "api-traced",
      "spar.watcher.reason": "BackOff",
      "spar.watcher.outcome": "opened",
    });
    expect(incident?.attributes["spar.session.id"]).toBe(fired);
    // The enricher's reads of the API server are the incident's children; the informers' watches are in no trace.
    const apiPort = Number(new URL(api.url).port);
    const apiCalls = receiver.spans.filter(
      (span) => span.kind === CLIENT && span.attributes["server.port"] === apiPort,
    );
    expect(apiCalls.some((span) => span.parentSpanId === incident?.spanId && span.name === "GET")).toBe(true);
    expect(apiCalls.every((span) => span.parentSpanId !== "")).toBe(true);
    expect(sink?.attributes).toMatchObject({ "spar.watcher.sink": "daemon", "spar.session.id": fired });
    // The session create is the sink's other client call, answered by the agent under it.
    const create = receiver.spans.find(
      (span) => span.parentSpanId === sink?.spanId && span.attributes["url.full"] === `${agent.baseUrl}/sessions`,
    );
    const created = receiver.spans.find((span) => span.parentSpanId === create?.spanId);
    expect(created).toMatchObject({ kind: SERVER, traceId: inject?.traceId, name: "POST /sessions" });
    // The watcher's bearer never reaches a span.
    const trace = receiver.spans.filter((span) => span.traceId === inject?.traceId);
    expect(JSON.stringify(trace)).not.toContain(WATCHER_ENV.WATCHER_TOKEN);
  }, 60_000);

  test("the webhook sink: each POST to the receiver carries the traceparent of its client span, under the sink attempt", async () => {
    const seen: Array<{ path: string; traceparent: string | null; authorization: string | null }> = [];
    const hook = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(request) {
        const path = new URL(request.url).pathname;
        seen.push({
          path,
          traceparent: request.headers.get("traceparent"),
          authorization: request.headers.get("authorization"),
        });
        return path === "/hooks/incidents" ? Response.json({ id: "inc-traced" }) : Response.json({ ok: true });
      },
    });
    scope.defer(hook, (server) => server.stop(true));
    const watcher = await startWatcherProcess([
      "--sink=webhook",
      `--sink-url=http://127.0.0.1:${hook.port}/hooks`,
      "--sink-token-env=HOOK_TOKEN",
    ]);
    crashLoop("api-hooked");
    await waitFor(
      () => (watcher.log().includes("fire BackOff pod=checkout/api-hooked") ? true : undefined),
      15_000,
      "fire line",
    );
    const open = seen.find((request) => request.path === "/hooks/incidents");
    expect(open?.authorization).toBe("Bearer hook-secret");
    const [, traceId, parentId] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(open?.traceparent ?? "") ?? [];
    await receiver.waitForSpans((all) => all.some((span) => span.spanId === parentId));
    // The receiver's parent is the watcher's client span, under the sink's open attempt, in the event's trace.
    const client = receiver.spans.find((span) => span.spanId === parentId);
    expect(client).toMatchObject({ kind: CLIENT, name: "POST", traceId });
    expect(client?.attributes["url.full"]).toBe(`http://127.0.0.1:${hook.port}/hooks/incidents`);
    const sink = parentOf(client);
    expect(sink?.name).toBe("watcher sink open");
    expect(sink?.attributes["spar.watcher.sink"]).toBe("webhook");
    expect(parentOf(parentOf(sink))?.name).toBe("watcher event");
    // The sink's token never reaches a span.
    const trace = receiver.spans.filter((span) => span.traceId === traceId);
    expect(JSON.stringify(trace)).not.toContain("hook-secret");
  }, 30_000);

  test("with telemetry off the sink's requests carry no traceparent, tracestate or baggage", async () => {
    const seen: Headers[] = [];
    const fake = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(request) {
        seen.push(request.headers);
        const path = new URL(request.url).pathname;
        return path === "/sessions"
          ? Response.json({ sessionID: "sess-untraced" }, { status: 201 })
          : Response.json({ ok: true });
      },
    });
    scope.defer(fake, (server) => server.stop(true));
    const watcher = await startWatcherProcess(`http://127.0.0.1:${fake.port}`, false);
    crashLoop("api-untraced");
    await waitFor(
      () => (watcher.log().includes("fire BackOff pod=checkout/api-untraced") ? true : undefined),
      15_000,
      "fire line",
    );
    expect(seen.length).toBeGreaterThanOrEqual(2);
    for (const headers of seen) {
      expect(headers.get("traceparent")).toBeNull();
      expect(headers.get("tracestate")).toBeNull();
      expect(headers.get("baggage")).toBeNull();
      expect(headers.get("authorization")).toBe(`Bearer ${WATCHER_ENV.WATCHER_TOKEN}`);
    }
    expect(watcher.log()).not.toContain("telemetry:");
  }, 30_000);
});
