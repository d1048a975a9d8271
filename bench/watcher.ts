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
 *
 * Other cases (`--case=...`, each instead of the above):
 * - sources: every portable source, each in its worker (bench/watcher-sources.ts).
 * - slow-sink: the daemon sink against a fake daemon, one incident's session answering in
 *   --slow-ms (5000); other incidents' event-to-inject p50/p99 against a healthy run
 *   (bench/watcher-judgement.ts; --slow-s=30, --slow-rate=20 fresh incidents/s, --rounds).
 * - routing-soak: 1,000 events/s (--rate) of critical, warning and info signals with severity
 *   routing and --store on for --soak-minutes (10) of real time; child RSS and store size every
 *   --sample-s (30), flat or not over the last half (bench/watcher-routing-soak.ts; --store-max-mb=32).
 */
import { join } from "node:path";
import { startFakeApiserver } from "../scripts/fake-apiserver/server.ts";
import { writeKubeconfig } from "../scripts/fake-apiserver/kubeconfig.ts";
import { argFlags, benchTempDir, fmt, median, nowMs, quantile, table } from "./lib.ts";
import { Cluster, WINDOW, closedLoop, log, sleep, spawnChild } from "./watcher-lib.ts";
import { slowSinkCase } from "./watcher-judgement.ts";
import { routingSoakCase } from "./watcher-routing-soak.ts";
import { allSourcesCase } from "./watcher-sources.ts";
import { outageCase } from "./watcher-outage.ts";

const flags = argFlags(process.argv.slice(2));
const ROUNDS = Number(flags.get("rounds") ?? 3);
const EVENTS = Number(flags.get("events") ?? 30_000);
const SOAK_MINUTES = Number(flags.get("soak-minutes") ?? 30);
const LATENCY_S = Number(flags.get("latency-s") ?? 15);
const SHAPE = { pods: 2000, nodes: 10, churn: 2000 };
const SIM_STEP_MS = 6; // 10,000 events per simulated minute
/** `--smol`: run the child with Bun's smaller-heap mode. */
const SMOL = flags.get("smol") === "true";
const SOAK_MODE = flags.get("soak-mode") === "raw" ? "raw" : "watcher";
/** Extra watcher flags for the child (`--watcher-flags=--enrich=off,--storm=auto`). */
const WATCHER_FLAGS = (flags.get("watcher-flags") ?? "").split(",").filter((flag) => flag !== "");
const CHILD = { smol: SMOL, flags: WATCHER_FLAGS };
/** `--case=sources`: every portable source on 5,000 pods and 500 nodes (bench/watcher-sources.ts). */
const CASE = flags.get("case") ?? "pipeline";
/** `--case=outage`: how long the daemon is down through the burst (bench/watcher-outage.ts). */
const OUTAGE_S = Number(flags.get("outage-s") ?? 120);

async function main(): Promise<void> {
  const dir = benchTempDir();
  if (CASE === "outage") {
    await outageCase(dir, OUTAGE_S);
    return;
  }
  if (CASE === "sources") {
    await allSourcesCase(dir, {
      rounds: ROUNDS,
      soakMinutes: SOAK_MINUTES,
      events: EVENTS,
      pacedSeconds: LATENCY_S,
      json: flags.get("json"),
    });
    return;
  }
  if (CASE === "slow-sink") {
    await slowSinkCase(dir, {
      rounds: ROUNDS,
      seconds: Number(flags.get("slow-s") ?? 30),
      rate: Number(flags.get("slow-rate") ?? 20),
      slowMs: Number(flags.get("slow-ms") ?? 5000),
      flags: WATCHER_FLAGS,
      json: flags.get("json"),
    });
    return;
  }
  if (CASE === "routing-soak") {
    await routingSoakCase(dir, {
      minutes: Number(flags.get("soak-minutes") ?? 10),
      rate: Number(flags.get("rate") ?? 1000),
      storeMaxMb: Number(flags.get("store-max-mb") ?? 32),
      sampleSeconds: Number(flags.get("sample-s") ?? 30),
      churn: Number(flags.get("churn") ?? 2000),
      flags: WATCHER_FLAGS,
      json: flags.get("json"),
    });
    return;
  }
  const results: Record<string, unknown> = {};
  const throughput: Record<"raw" | "watcher", number[]> = { raw: [], watcher: [] };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const mode of ["raw", "watcher"] as const) {
      const api = await startFakeApiserver({ historyLimit: 2 * WINDOW + 10_000 });
      const cluster = new Cluster(api, SHAPE);
      const child = await spawnChild(
        mode,
        writeKubeconfig(join(dir, `kc-${mode}-${round}`), { server: api.url }),
        CHILD,
      );
      try {
        await closedLoop(cluster, child, { events: 2000, simStart: Date.now(), simStepMs: SIM_STEP_MS });
        const { rate } = await closedLoop(cluster, child, {
          events: EVENTS,
          simStart: Date.now() + 60_000,
          simStepMs: SIM_STEP_MS,
        });
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
  const cluster = new Cluster(api, SHAPE);
  const child = await spawnChild(SOAK_MODE, writeKubeconfig(join(dir, "kc-soak"), { server: api.url }), CHILD);
  try {
    const simStart = Date.now();
    await closedLoop(cluster, child, { events: 2000, simStart: simStart - 60_000, simStepMs: SIM_STEP_MS });
    const soakStarted = nowMs();
    const soak = await closedLoop(cluster, child, {
      events: SOAK_MINUTES * (60_000 / SIM_STEP_MS),
      simStart,
      simStepMs: SIM_STEP_MS,
    });
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
