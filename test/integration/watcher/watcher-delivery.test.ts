/**
 * Incidents are not lost when the daemon fails (issue 13 item 11), against the fake kube-apiserver:
 * a daemon answering 503 with Retry-After while it restarts gets the OOMKilled incident's inject
 * again after the time it asked for, and exactly once; with a real `spar agent` down when the
 * incident fires and the watcher itself restarted meanwhile, the pending open survives in the
 * journal beside the dedup file (0600) and reaches the daemon once it is back: one session, one
 * payload, and the incident's next event is a duplicate of it.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { type Daemon, tempDir, waitFor } from "../../support/daemon.ts";
import { collect } from "../../support/sse-client.ts";
import {
  ONCALL_TOKEN,
  OWNER,
  startTriageDaemon,
  startTriageWatcher,
  triageScope,
} from "../../support/triage-daemon.ts";

const triage = triageScope({ daemon: false });

/** A watcher delivering to `daemonUrl` (the triage daemon or a gateway in front of it). */
const watcher = (daemonUrl: string, ...extra: string[]) =>
  startTriageWatcher(daemonUrl, triage.kubeconfig, [
    "--storm=off",
    "--recovery-stable-for=0",
    "--enrich=off",
    ...extra,
  ]);

function oomKilled(namespace: string, name: string, at = Date.now()) {
  const pod = triage.api.scenario.createPod({
    namespace,
    name,
    node: "node-a",
    containers: [{ name: "app", restartCount: 1 }],
  } as never);
  triage.api.scenario.recordEvent({
    involvedObject: pod,
    reason: "OOMKilled",
    message: "Container app exceeded its memory limit",
    type: "Warning",
    source: { component: "kubelet", host: "node-a" },
    lastTimestamp: new Date(at).toISOString(),
  });
  return pod;
}

/**
 * Every user row of a session whose text is an incident payload (one per inject), read as the
 * owner once at least one arrived. Then a barrier: the session's feed is ordered, so once the
 * `inbox` frame of a message the owner queues with wake:false (no turn, no row) arrives, every
 * row published before it has arrived too.
 */
async function injectedRows(daemon: Daemon, sessionId: string): Promise<Array<Record<string, unknown>>> {
  const headers = { authorization: `Bearer ${ONCALL_TOKEN}` };
  const stream = collect(`${daemon.baseUrl}/sessions/${sessionId}/events?since=0`, { headers });
  const incidents = () =>
    stream.frames
      .filter((frame) => frame.event === "agent")
      .map((frame) => (frame.data.event as { Content?: { role?: string; parts?: Array<{ text?: string }> } }).Content)
      .filter((content) => content?.role === "user")
      .map((content) => (content?.parts ?? []).map((part) => part.text ?? "").join(""))
      .filter((text) => text.startsWith('{"kind"'))
      .map((text) => JSON.parse(text) as Record<string, unknown>);
  try {
    await waitFor(() => (incidents().length > 0 ? true : undefined), 10_000, `an incident row in ${sessionId}`);
    const barrier = await fetch(`${daemon.baseUrl}/sessions/${sessionId}/inject`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ message: "barrier", wake: false }),
    });
    expect(barrier.status).toBe(200);
    const { prompt_id } = (await barrier.json()) as { prompt_id: string };
    await stream.waitFor((frame) => frame.event === "inbox" && frame.data.prompt_id === prompt_id, 10_000);
    return incidents();
  } finally {
    stream.close();
  }
}

describe("sink retries", () => {
  test("a daemon answering 503 with Retry-After: the inject is re-sent after the time asked for, and lands exactly once", async () => {
    const injects: Array<{ at: number; status: number; body: string }> = [];
    let creates = 0;
    const daemon = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(request) {
        const path = new URL(request.url).pathname;
        if (request.method === "POST" && path === "/sessions") {
          creates++;
          return Response.json({ app: "spar", user: OWNER, sessionID: `sess-${creates}`, url: "" }, { status: 201 });
        }
        if (request.method === "POST" && /^\/sessions\/[^/]+\/inject$/.test(path)) {
          const body = await request.text();
          // Restarting: the first two injects are refused the way spar refuses during shutdown.
          const status = injects.length < 2 ? 503 : 200;
          injects.push({ at: Date.now(), status, body });
          if (status === 503)
            return Response.json(
              { error: "shutting_down", message: "daemon is shutting down; retry against its successor" },
              { status, headers: { "retry-after": "1" } },
            );
          return Response.json({ injected: true, session: path.split("/")[2], woke: true });
        }
        return Response.json({ error: "not_found" }, { status: 404 });
      },
    });
    const { running, log } = await watcher(`http://127.0.0.1:${daemon.port}`);
    try {
      oomKilled("payments", "ledger-oom");
      await waitFor(
        () => (injects.some((inject) => inject.status === 200) ? true : undefined),
        10_000,
        "the inject accepted",
      );
      // Delivered: nothing is left in the re-send journal, so nothing more is sent.
      await running.dispatcher.idle();
      await waitFor(
        () =>
          running.metrics.render().includes('watcher_deliveries_pending{cluster="kind-test"} 0') ? true : undefined,
        10_000,
        "the re-send journal empty",
      );
      expect(injects.map((inject) => inject.status)).toEqual([503, 503, 200]);
      expect(creates).toBe(1);
      expect((injects[1]?.at ?? 0) - (injects[0]?.at ?? 0)).toBeGreaterThanOrEqual(950);
      expect((injects[2]?.at ?? 0) - (injects[1]?.at ?? 0)).toBeGreaterThanOrEqual(950);
      const payload = JSON.parse(
        String((JSON.parse(injects[2]?.body ?? "{}") as { message?: string }).message),
      ) as Record<string, unknown>;
      expect(payload).toMatchObject({
        kind: "cluster-event",
        reason: "OOMKilled",
        name: "ledger-oom",
        cluster: "kind-test",
      });
      expect(new Set(injects.map((inject) => inject.body)).size).toBe(1);
      expect(
        log.some(
          (line) =>
            line.includes("inject OOMKilled pod=payments/ledger-oom into sess-1 failed: inject: HTTP 503") &&
            line.includes("queued, re-sending with backoff"),
        ),
      ).toBe(true);
      const metrics = running.metrics.render();
      expect(metrics).toContain('watcher_deliveries_retried_total{cluster="kind-test",op="inject"} 2');
      expect(metrics).toContain('watcher_deliveries_retry_succeeded_total{cluster="kind-test",op="inject"} 1');
      expect(metrics).toContain(
        'watcher_events_injected_total{cluster="kind-test",namespace="payments",reason="OOMKilled"} 1',
      );
      expect(metrics).toContain('watcher_deliveries_pending{cluster="kind-test"} 0');
    } finally {
      await running.stop();
      daemon.stop(true);
    }
  }, 30_000);

  test("the daemon committed the inject but its answer was lost: the retry carries the same Idempotency-Key and lands nothing new", async () => {
    const daemon = await startTriageDaemon(tempDir());
    const answers: Array<{ status: number; duplicate?: boolean }> = [];
    let lose = true;
    // A gateway in front of the real daemon that loses the first inject's answer (502) after the daemon took it.
    const gateway = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(request) {
        const path = new URL(request.url).pathname;
        const headers = new Headers(request.headers);
        headers.delete("host");
        const upstream = await fetch(`${daemon.baseUrl}${path}`, {
          method: request.method,
          headers,
          ...(request.method === "POST" ? { body: await request.text() } : {}),
        });
        if (!/\/inject$/.test(path)) return upstream;
        const body = (await upstream.json()) as { duplicate?: boolean };
        answers.push({ status: upstream.status, ...(body.duplicate ? { duplicate: true } : {}) });
        if (lose) {
          lose = false;
          return Response.json({ error: "bad gateway" }, { status: 502 });
        }
        return Response.json(body, { status: upstream.status });
      },
    });
    const { running, log } = await watcher(`http://127.0.0.1:${gateway.port}`);
    try {
      oomKilled("ledger", "lost-answer-oom");
      await waitFor(() => (answers.length >= 2 ? true : undefined), 10_000, "the retry");
      expect(answers).toEqual([{ status: 200 }, { status: 200, duplicate: true }]);
      const fired = await waitFor(
        () => log.find((line) => line.includes("pod=ledger/lost-answer-oom") && /sid=sess-/.test(line)),
        8000,
        "the session id in the log",
      );
      const sid = /sid=(\S+)/.exec(fired)?.[1] ?? "";
      const rows = await injectedRows(daemon, sid);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ reason: "OOMKilled", name: "lost-answer-oom" });
    } finally {
      await running.stop();
      gateway.stop(true);
      await daemon.sigterm();
    }
  }, 30_000);

  test("daemon down when the incident fires, watcher restarted meanwhile: the open survives in the journal and is delivered once the daemon is back", async () => {
    const state = join(triage.dir, "restart-state");
    const dedup = join(state, "dedup.json");
    const first = await startTriageDaemon(join(triage.dir), {});
    const address = `127.0.0.1:${first.port}`;
    const before = await watcher(first.baseUrl, `--dedup-persist=${dedup}`);
    await first.sigterm();
    const pod = oomKilled("billing", "invoicer-oom");
    await waitFor(
      () =>
        before.log.find(
          (line) =>
            line.includes("open OOMKilled pod=billing/invoicer-oom failed") && line.includes("queued, re-sending"),
        ),
      8000,
      "the failed open queued",
    );
    await before.running.stop();
    const journal = `${dedup}.pending`;
    expect(statSync(journal).mode & 0o777).toBe(0o600);
    expect(statSync(state).mode & 0o777).toBe(0o700);
    expect(readFileSync(journal, "utf8")).toContain("invoicer-oom");

    const daemon = await startTriageDaemon(triage.dir, { listen: address, sessionDb: first.sessionDb });
    const after = await watcher(daemon.baseUrl, `--dedup-persist=${dedup}`);
    try {
      const fired = await waitFor(
        () =>
          after.log.find(
            (line) => line.includes("fire OOMKilled pod=billing/invoicer-oom") && line.includes("queued open"),
          ),
        10_000,
        "the queued open delivered",
      );
      const sid = /sid=(\S+)/.exec(fired)?.[1] ?? "";
      expect(sid).toMatch(/^sess-/);
      // The incident's next event is a duplicate of the delivered incident, not a second session.
      triage.api.scenario.recordEvent({
        involvedObject: pod,
        reason: "OOMKilled",
        message: "Container app exceeded its memory limit",
        type: "Warning",
        source: { component: "kubelet", host: "node-a" },
        lastTimestamp: new Date(Date.now() + 2000).toISOString(),
      });
      await waitFor(
        () => after.log.find((line) => line.includes("dedup OOMKilled pod=billing/invoicer-oom")),
        8000,
        "the duplicate suppressed",
      );
      const rows = await injectedRows(daemon, sid);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        kind: "cluster-event",
        reason: "OOMKilled",
        name: "invoicer-oom",
        namespace: "billing",
      });
      expect(after.log.filter((line) => line.includes("fire OOMKilled pod=billing/invoicer-oom"))).toHaveLength(1);
      await after.running.stop();
      // Nothing is owed any more: the journal, compacted at stop, is empty.
      expect(readFileSync(journal, "utf8")).toBe("");
    } finally {
      await after.running.stop();
      await daemon.sigterm();
    }
  }, 60_000);
});

/**
 * A daemon that can go down (its port closed: connection refused) and come back on the same
 * port; it records each session it creates and each inject's payload name.
 */
function outageDaemon() {
  const creates: string[] = [];
  const injected: string[] = [];
  const serve = (port: number) =>
    Bun.serve({
      hostname: "127.0.0.1",
      port,
      async fetch(request) {
        const path = new URL(request.url).pathname;
        if (request.method === "POST" && path === "/sessions") {
          const id = `sess-${creates.length + 1}`;
          creates.push(id);
          return Response.json({ app: "spar", user: OWNER, sessionID: id, url: "" }, { status: 201 });
        }
        if (request.method === "POST" && /^\/sessions\/[^/]+\/inject$/.test(path)) {
          const { message } = (await request.json()) as { message: string };
          injected.push(String((JSON.parse(message) as { name?: unknown }).name));
          return Response.json({ injected: true, session: path.split("/")[2], woke: true });
        }
        return Response.json({ error: "not_found" }, { status: 404 });
      },
    });
  let server: ReturnType<typeof Bun.serve> | undefined = serve(0);
  const port = server.port;
  return {
    url: `http://127.0.0.1:${port}`,
    creates,
    injected,
    down() {
      server?.stop(true);
      server = undefined;
    },
    async up() {
      // The port was ours a moment ago; re-listening can race its release, so try a few times.
      for (let attempt = 0; ; attempt++) {
        try {
          server = serve(port ?? 0);
          return;
        } catch (error) {
          if (attempt >= 50) throw error;
          await Bun.sleep(100); // poll: the port's release.
        }
      }
    },
    stop() {
      server?.stop(true);
    },
  };
}

describe("an outage during a burst (D450, D451)", () => {
  test("the daemon down through a burst of 5,000 signals over 1,500 incidents: every incident lands once when it returns, none lost, none doubled, the window bounded", async () => {
    const daemon = outageDaemon();
    const dir = tempDir();
    const { running, log } = await startTriageWatcher(
      daemon.url,
      triage.kubeconfig,
      ["--storm=off", "--recovery-stable-for=0", "--enrich=off", `--store=${join(dir, "store.db")}`],
      {
        deliveryPolicy: {
          backoffMinMs: 50,
          backoffMaxMs: 400,
          retryAfterMaxMs: 1000,
          giveUpAfterMs: 600_000,
          maxPending: 1000,
        },
      },
    );
    const gauge = (name: string) =>
      Number(new RegExp(`^watcher_${name}\\{cluster="kind-test"\\} (\\d+)$`, "m").exec(running.metrics.render())?.[1]);
    let peakSpilled = 0;
    let peakWindow = 0;
    const sample = setInterval(() => {
      peakSpilled = Math.max(peakSpilled, gauge("deliveries_spilled"));
      peakWindow = Math.max(peakWindow, gauge("deliveries_pending") - gauge("deliveries_spilled"));
    }, 20);
    try {
      daemon.down();
      const INCIDENTS = 1500;
      const pods = Array.from({ length: INCIDENTS }, (_, index) =>
        triage.api.scenario.createPod({
          namespace: `burst-${index % 10}`,
          name: `burst-${index}`,
          node: "node-a",
          containers: [{ name: "app", restartCount: 1 }],
        } as never),
      );
      const events = pods.map((pod) =>
        triage.api.scenario.recordEvent({
          involvedObject: pod,
          reason: "OOMKilled",
          message: "Container app exceeded its memory limit",
          type: "Warning",
          source: { component: "kubelet", host: "node-a" },
        } as never),
      );
      // 3,500 repeats of those events: 5,000 signals in all.
      for (let index = 0; index < 5000 - INCIDENTS; index++) {
        const slot = index % INCIDENTS;
        const event = events[slot] as Record<string, unknown>;
        events[slot] = triage.api.scenario.update({ ...event, count: Number(event.count ?? 1) + 1 });
      }
      const seen = () => {
        let total = 0;
        for (const match of running.metrics.render().matchAll(/^watcher_events_seen_total\{[^}]*\} (\d+)$/gm))
          total += Number(match[1]);
        return total;
      };
      await waitFor(() => (seen() >= 5000 ? true : undefined), 60_000, "every signal seen");
      await running.dispatcher.idle();
      expect(gauge("deliveries_pending")).toBe(INCIDENTS);
      expect(daemon.creates).toHaveLength(0);
      await daemon.up();
      await waitFor(() => (gauge("deliveries_pending") === 0 ? true : undefined), 60_000, "every open delivered");
      await running.dispatcher.idle();
      expect(daemon.creates).toHaveLength(INCIDENTS);
      expect(daemon.injected).toHaveLength(INCIDENTS);
      expect(new Set(daemon.injected).size).toBe(INCIDENTS);
      // The queue's memory held at most its window; the rest waited in the store.
      expect(peakSpilled).toBeGreaterThanOrEqual(INCIDENTS - 1000);
      expect(peakWindow).toBeLessThanOrEqual(1000);
      const metrics = running.metrics.render();
      expect(metrics).not.toMatch(/watcher_deliveries_dropped_total\{/);
      expect(metrics).not.toMatch(/watcher_dispatch_refused_total\{/);
      // Each incident's session is bound: a repeat now is a duplicate, never a second session.
      const event = events[7] as Record<string, unknown>;
      triage.api.scenario.update({ ...event, count: Number(event.count ?? 1) + 1 });
      await waitFor(() => (seen() >= 5001 ? true : undefined), 10_000, "the repeat seen");
      await running.dispatcher.idle();
      expect(daemon.creates).toHaveLength(INCIDENTS);
      expect(log.filter((line) => line.includes("queued open") && line.includes("pod=burst-0/burst-0 "))).toHaveLength(
        1,
      );
    } finally {
      clearInterval(sample);
      await running.stop();
      daemon.stop();
    }
  }, 120_000);
});

describe("a slow daemon (D450)", () => {
  test("a daemon answering one incident's calls in 5 s delays only that incident: the others' sessions open meanwhile", async () => {
    const SLOW_MS = 5000;
    const arrivals = new Map<string, number>();
    let created = 0;
    const daemon = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 30,
      async fetch(request) {
        const path = new URL(request.url).pathname;
        if (request.method === "POST" && path === "/sessions")
          return Response.json({ app: "spar", user: OWNER, sessionID: `sess-${++created}`, url: "" }, { status: 201 });
        if (request.method === "POST" && /^\/sessions\/[^/]+\/inject$/.test(path)) {
          const { message } = (await request.json()) as { message: string };
          const name = String((JSON.parse(message) as { name?: unknown }).name);
          if (name === "slow-0") await Bun.sleep(SLOW_MS); // time under test: the slow incident's answer.
          if (!arrivals.has(name)) arrivals.set(name, Date.now());
          return Response.json({ injected: true, session: path.split("/")[2], woke: true });
        }
        return Response.json({ error: "not_found" }, { status: 404 });
      },
    });
    const { running } = await watcher(`http://127.0.0.1:${daemon.port}`);
    try {
      const started = Date.now();
      oomKilled("slow", "slow-0");
      // Give the slow incident's open a head start, then ten others.
      await waitFor(() => (created >= 1 ? true : undefined), 10_000, "the slow incident's session");
      for (let index = 1; index <= 10; index++) oomKilled("slow", `quick-${index}`);
      await waitFor(
        () => ([...arrivals.keys()].filter((name) => name.startsWith("quick-")).length === 10 ? true : undefined),
        10_000,
        "the other incidents",
      );
      // Every other incident landed while the slow one's inject was still held.
      expect(arrivals.has("slow-0")).toBe(false);
      expect(Math.max(...arrivals.values()) - started).toBeLessThan(SLOW_MS);
      await waitFor(() => (arrivals.has("slow-0") ? true : undefined), 15_000, "the slow incident");
      await running.dispatcher.idle();
      expect(created).toBe(11);
    } finally {
      await running.stop();
      daemon.stop(true);
    }
  }, 40_000);
});
