/**
 * bench/watcher: Kubernetes events through the watcher pipeline against the fake kube-apiserver
 * (in this process) with the dry-run sink (in a child process, bench/watcher-child.ts).
 *
 *   bun bench/watcher.ts [--rounds=3] [--events=30000] [--soak-minutes=30] [--latency-s=15] [--json=out.json]
 *
 * Cases:
 * - throughput: a closed loop (at most 5,000 events ahead of what the child has seen) of repeat
 *   events over a pool of 2,000 crash-looping pods, 2 % of events a new pod replacing the oldest
 *   churn pod; the pipeline runs filter, dedup, enrichment of new incidents (three reads each),
 *   recovery tracking and the dry-run sink. Baseline in the same run: `raw`, the same list+watch
 *   over Bun's fetch parsing and counting each event and nothing else. Median of the rounds.
 * - soak: the throughput loop for --soak-minutes of simulated time at 10,000 events/minute
 *   (event timestamps and the pipeline's clock advance 6 ms per event, so a simulated half hour of
 *   dedup windows, expiries and recovery runs in a few real minutes); the child's RSS each
 *   simulated minute.
 * - latency: paced at 10,000 events/minute of real time, each event a new incident (so each one is
 *   enriched), one run per round after the soak; event-to-inject latency is the child's print time
 *   minus the moment this process stored the event (same clock). Medians of the rounds.
 */
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../scripts/fake-apiserver/server.ts";
import { writeKubeconfig } from "../scripts/fake-apiserver/kubeconfig.ts";
import { BUN, REPO_ROOT, argFlags, benchTempDir, fmt, median, nowMs, quantile, rssKiB, table, track } from "./lib.ts";

const flags = argFlags(process.argv.slice(2));
const ROUNDS = Number(flags.get("rounds") ?? 3);
const EVENTS = Number(flags.get("events") ?? 30_000);
const SOAK_MINUTES = Number(flags.get("soak-minutes") ?? 30);
const LATENCY_S = Number(flags.get("latency-s") ?? 15);
const POOL = 2000;
const CHURN_RING = 2000;
const WINDOW = 5000;
const SIM_STEP_MS = 6; // 10,000 events per simulated minute
const NAMESPACES = 20;
/** `--smol`: run the child with Bun's smaller-heap mode. */
const SMOL = flags.get("smol") === "true";
const SOAK_MODE = flags.get("soak-mode") === "raw" ? "raw" : "watcher";
/** Extra watcher flags for the child (`--watcher-flags=--enrich=off,--storm=auto`). */
const WATCHER_FLAGS = (flags.get("watcher-flags") ?? "").split(",").filter((flag) => flag !== "");

type Obj = Record<string, unknown>;
const log = (text: string) => process.stderr.write(`${text}\n`);

class Cluster {
  private readonly pool: Array<{ pod: Obj; event?: Obj }> = [];
  private readonly churn: Array<{ pod: Obj; event: Obj }> = [];
  private serial = 0;
  private next = 0;

  constructor(private readonly api: FakeApiserver) {
    for (let i = 0; i < POOL; i++) this.pool.push({ pod: this.newPod(`pool-${i}`) });
  }

  private newPod(name: string): Obj {
    return this.api.scenario.createPod({
      namespace: `ns-${this.serial++ % NAMESPACES}`,
      name,
      node: `node-${this.serial % 10}`,
      containers: [
        { name: "app", image: "registry.example/app:v1", waitingReason: "CrashLoopBackOff", restartCount: 5 },
      ],
    } as never);
  }

  private record(pod: Obj, at: number): Obj {
    return this.api.scenario.recordEvent({
      involvedObject: pod,
      reason: "BackOff",
      message: "Back-off restarting failed container app",
      type: "Warning",
      source: { component: "kubelet", host: "node-1" },
      fieldPath: "spec.containers{app}",
      lastTimestamp: new Date(at).toISOString(),
      distinct: true,
    } as never);
  }

  /** A brand-new incident: a new pod and its first event; the oldest churn pod and event are deleted. */
  fresh(at: number): string {
    const name = `churn-${this.serial}`;
    const pod = this.newPod(name);
    this.churn.push({ pod, event: this.record(pod, at) });
    if (this.churn.length > CHURN_RING) {
      const old = this.churn.shift();
      for (const object of [old?.event, old?.pod]) {
        const meta = (object?.metadata ?? {}) as { namespace?: string; name?: string };
        if (object)
          this.api.scenario.delete({
            apiVersion: "v1",
            kind: String(object.kind),
            namespace: meta.namespace,
            name: String(meta.name),
          } as never);
      }
    }
    return name;
  }

  /** A repeat of a pool pod's event (count+1), or its first one. */
  repeat(at: number): void {
    const slot = this.pool[this.next++ % POOL] as { pod: Obj; event?: Obj };
    if (!slot.event) {
      slot.event = this.record(slot.pod, at);
      return;
    }
    slot.event = this.api.scenario.update({
      ...slot.event,
      count: Number(slot.event.count ?? 1) + 1,
      lastTimestamp: new Date(at).toISOString(),
    });
  }
}

interface Child {
  proc: ReturnType<typeof Bun.spawn>;
  seen: number;
  heap: number;
  injects: Map<string, number>;
  stop(): Promise<void>;
}

async function spawnChild(mode: "watcher" | "raw", kubeconfig: string): Promise<Child> {
  let ready: () => void = () => {};
  const started = new Promise<void>((resolve) => {
    ready = resolve;
  });
  const child: Child = {
    seen: 0,
    heap: 0,
    injects: new Map(),
    proc: Bun.spawn(
      [BUN, ...(SMOL ? ["--smol"] : []), join(REPO_ROOT, "bench/watcher-child.ts"), mode, kubeconfig, ...WATCHER_FLAGS],
      {
        cwd: REPO_ROOT,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "inherit",
        ipc: (message: { ready?: boolean; seen?: number; heap?: number }) => {
          if (message.ready) ready();
          if (typeof message.seen === "number") child.seen = message.seen;
          if (typeof message.heap === "number") child.heap = message.heap;
        },
      },
    ),
    stop: async () => {
      child.proc.kill("SIGKILL");
      await child.proc.exited;
    },
  };
  track(child.proc);
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of child.proc.stdout as ReadableStream<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      const lines = buffer.split("\n");
      buffer = lines.pop() ?? "";
      for (const line of lines) {
        const [, name, at] = line.split(" ");
        if (name && at && !child.injects.has(name)) child.injects.set(name, Number(at));
      }
    }
  })();
  await started;
  return child;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Closed loop: `events` events, at most WINDOW ahead of the child; returns events/s and RSS samples per simulated minute. */
async function closedLoop(
  cluster: Cluster,
  child: Child,
  events: number,
  simStart: number,
): Promise<{ rate: number; rss: number[]; heap: number[] }> {
  const base = child.seen;
  const rss: number[] = [rssKiB(child.proc.pid)];
  const heap: number[] = [child.heap];
  const perMinute = 60_000 / SIM_STEP_MS;
  const started = nowMs();
  let created = 0;
  while (created < events) {
    if (created - (child.seen - base) > WINDOW) {
      await sleep(2);
      continue;
    }
    const batch = Math.min(250, events - created);
    for (let i = 0; i < batch; i++) {
      const at = simStart + (created + i) * SIM_STEP_MS;
      if ((created + i) % 50 === 0) cluster.fresh(at);
      else cluster.repeat(at);
      if ((created + i + 1) % perMinute === 0) {
        rss.push(rssKiB(child.proc.pid));
        heap.push(child.heap);
      }
    }
    created += batch;
    child.proc.send({ sim: simStart + created * SIM_STEP_MS });
    await sleep(0);
  }
  const deadline = Date.now() + 120_000;
  while (child.seen - base < events && Date.now() < deadline) await sleep(5);
  const seconds = (nowMs() - started) / 1000;
  if (child.seen - base < events) log(`  only ${child.seen - base} of ${events} events seen`);
  return { rate: (child.seen - base) / seconds, rss, heap };
}

async function main(): Promise<void> {
  const dir = benchTempDir();
  const results: Record<string, unknown> = {};
  const throughput: Record<"raw" | "watcher", number[]> = { raw: [], watcher: [] };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const mode of ["raw", "watcher"] as const) {
      const api = await startFakeApiserver({ historyLimit: 2 * WINDOW + 10_000 });
      const cluster = new Cluster(api);
      const child = await spawnChild(mode, writeKubeconfig(join(dir, `kc-${mode}-${round}`), { server: api.url }));
      try {
        await closedLoop(cluster, child, 2000, Date.now());
        const { rate } = await closedLoop(cluster, child, EVENTS, Date.now() + 60_000);
        throughput[mode].push(rate);
        log(`round ${round} ${mode}: ${rate.toFixed(0)} events/s`);
      } finally {
        await child.stop();
        await api.stop();
      }
    }
  }
  const raw = median(throughput.raw);
  const watcher = median(throughput.watcher);
  results.throughput = { raw: throughput.raw, watcher: throughput.watcher };
  console.log("### Throughput (closed loop, median of rounds)\n");
  console.log(
    table(
      ["case", "events/s (median)", "rounds", "ratio to raw"],
      [
        ["raw list+watch (baseline)", fmt(raw), throughput.raw.map((value) => value.toFixed(0)).join(", "), "1"],
        [
          "watcher pipeline, dry-run sink",
          fmt(watcher),
          throughput.watcher.map((value) => value.toFixed(0)).join(", "),
          fmt(watcher / raw),
        ],
      ],
    ),
  );

  // Soak: SOAK_MINUTES simulated at 10,000 events/minute.
  const api = await startFakeApiserver({ historyLimit: 2 * WINDOW + 10_000 });
  const cluster = new Cluster(api);
  const child = await spawnChild(SOAK_MODE, writeKubeconfig(join(dir, "kc-soak"), { server: api.url }));
  try {
    const simStart = Date.now();
    await closedLoop(cluster, child, 2000, simStart - 60_000);
    const soakStarted = nowMs();
    const soak = await closedLoop(cluster, child, SOAK_MINUTES * (60_000 / SIM_STEP_MS), simStart);
    const realS = (nowMs() - soakStarted) / 1000;
    const mb = soak.rss.map((kib) => kib / 1024);
    const heapMb = soak.heap.map((bytes) => bytes / 1024 / 1024);
    const pick = (series: number[], minute: number) => fmt(series[Math.min(series.length - 1, minute)] ?? Number.NaN);
    results.soak = { rssMB: mb, heapMB: heapMb, eventsPerSecond: soak.rate, realSeconds: realS };
    console.log(
      `\n### Soak: ${SOAK_MINUTES} simulated minutes at 10,000 events/minute (${fmt(realS)} s real, ${fmt(soak.rate)} events/s)\n`,
    );
    const marks = [0, 5, 10, 15, 20, 25, 30].filter((minute) => minute <= SOAK_MINUTES);
    console.log(
      table(
        ["simulated minute", ...marks.map(String), "max"],
        [
          ["child RSS (MB)", ...marks.map((minute) => pick(mb, minute)), fmt(Math.max(...mb))],
          ["child JS heap used (MB)", ...marks.map((minute) => pick(heapMb, minute)), fmt(Math.max(...heapMb))],
        ],
      ),
    );

    // Latency: paced at 10,000 events/minute real time, every event a new incident; one run per round.
    const runs: Array<{ injected: number; offered: number; p50: number; p99: number; max: number }> = [];
    for (let round = 0; round < Math.max(1, ROUNDS); round++) {
      const stored = new Map<string, number>();
      const pacedStart = nowMs();
      const total = Math.round((LATENCY_S * 10_000) / 60);
      for (let i = 0; i < total; i++) {
        const wait = pacedStart + (i * 60_000) / 10_000 - nowMs();
        if (wait > 1) await sleep(wait);
        const at = simStart + (SOAK_MINUTES + round) * 60_000 + (nowMs() - pacedStart);
        child.proc.send({ sim: at });
        stored.set(cluster.fresh(at), nowMs());
      }
      const deadline = Date.now() + 30_000;
      while ([...stored.keys()].some((name) => !child.injects.has(name)) && Date.now() < deadline) await sleep(20);
      const latencies = [...stored]
        .flatMap(([name, at]) => (child.injects.has(name) ? [(child.injects.get(name) ?? 0) - at] : []))
        .sort((a, b) => a - b);
      runs.push({
        injected: latencies.length,
        offered: total,
        p50: quantile(latencies, 0.5),
        p99: quantile(latencies, 0.99),
        max: latencies.at(-1) ?? Number.NaN,
      });
      log(
        `latency round ${round + 1}: p50 ${fmt(quantile(latencies, 0.5))} ms, p99 ${fmt(quantile(latencies, 0.99))} ms`,
      );
      await sleep(2000);
    }
    results.latency = runs;
    console.log(
      `\n### Event-to-inject latency, paced at 10,000 events/minute, each a new incident (${LATENCY_S} s per round)\n`,
    );
    console.log(
      table(
        ["round", "injected / offered", "p50 ms", "p99 ms", "max ms"],
        [
          ...runs.map((run, index) => [
            String(index + 1),
            `${run.injected} / ${run.offered}`,
            fmt(run.p50),
            fmt(run.p99),
            fmt(run.max),
          ]),
          [
            "median",
            "",
            fmt(median(runs.map((run) => run.p50))),
            fmt(median(runs.map((run) => run.p99))),
            fmt(median(runs.map((run) => run.max))),
          ],
        ],
      ),
    );
  } finally {
    await child.stop();
    await api.stop();
  }
  const json = flags.get("json");
  if (json) await Bun.write(json, JSON.stringify(results, null, 2));
}

await main();
process.exit(0);
