/**
 * bench/watcher.ts --case=sources: every portable source (`--sources=auto` on the fake
 * apiserver, which serves what each reads) on a cluster of 5,000 pods over 500 nodes, events
 * offered in a closed loop with the pipeline's clock at 1,000 events per simulated second.
 * Three children per round, each on its own fresh apiserver: `raw` (the same list+watch of
 * events, parsed and counted: the baseline), the watcher with each source in its worker (the
 * default), and the watcher with its sources on the main thread (what the workers are for).
 * Reported: events/s in the closed loop (median of rounds, ratio to raw), the main thread's
 * event-loop lag p99 while events arrive at 1,000 per real second (--latency-s seconds), the
 * longest stall of the main thread while the sources made their first lists, the child's RSS,
 * and a soak of --soak-minutes simulated minutes with the child's RSS each five
 * (sources in workers read the wall clock: their windows do not run at the simulated pace).
 */
import { join } from "node:path";
import { startFakeApiserver } from "../scripts/fake-apiserver/server.ts";
import { writeKubeconfig } from "../scripts/fake-apiserver/kubeconfig.ts";
import { fmt, median, nowMs, rssKiB, table } from "./lib.ts";
import { type Child, Cluster, WINDOW, closedLoop, log, sleep, spawnChild } from "./watcher-lib.ts";

const SHAPE = { pods: 5000, nodes: 500, churn: 2000 };
/** 1,000 events per simulated second. */
const SIM_STEP_MS = 1;
const FLAGS = ["--sources=auto", "--storm=auto"];

type Mode = "raw" | "workers" | "main";

export interface SourcesCaseOptions {
  rounds: number;
  soakMinutes: number;
  events: number;
  /** Seconds of the paced phase (1,000 events/s real time) the lag is measured over. */
  pacedSeconds: number;
  json?: string | undefined;
}

/**
 * The main thread's event-loop lag while events arrive at 1,000 per second of real time (the
 * issue's rate; the closed loop saturates the pipeline by design, so its lag says nothing).
 */
async function pacedLag(cluster: Cluster, child: Child, seconds: number): Promise<[number, number, number]> {
  const base = child.seen;
  child.proc.send({ lagReset: true });
  const started = nowMs();
  const total = seconds * 1000;
  for (let offered = 0; offered < total; ) {
    const due = Math.min(total, Math.floor(nowMs() - started));
    for (; offered < due; offered++) {
      const at = Date.now();
      if (offered % 50 === 0) cluster.fresh(at);
      else cluster.repeat(at);
    }
    child.proc.send({ sim: Date.now() });
    await sleep(5);
  }
  const deadline = Date.now() + 30_000;
  while (child.seen - base < total && Date.now() < deadline) await sleep(20);
  // pacing: one more report after the last event (the child reports every 100 ms).
  await sleep(250);
  return child.lag;
}

async function oneRun(dir: string, mode: Mode, events: number, tag: string, pacedSeconds: number) {
  const api = await startFakeApiserver({ historyLimit: 2 * WINDOW + 20_000 });
  const built = nowMs();
  const cluster = new Cluster(api, SHAPE);
  log(`  ${tag}: cluster built in ${fmt(nowMs() - built)} ms`);
  const child = await spawnChild(
    mode === "raw" ? "raw" : "watcher",
    writeKubeconfig(join(dir, `kc-${tag}`), { server: api.url }),
    {
      flags: FLAGS,
      env: mode === "main" ? { SPAR_BENCH_SOURCE_THREADS: "main" } : {},
    },
  );
  try {
    // pacing: the child reports every 100 ms; its first lag report spans its start and the sources' first lists.
    await sleep(300);
    const startupLagMs = child.lag[2];
    await closedLoop(cluster, child, { events: 2000, simStart: Date.now(), simStepMs: SIM_STEP_MS });
    const { rate } = await closedLoop(cluster, child, {
      events,
      simStart: Date.now() + 60_000,
      simStepMs: SIM_STEP_MS,
    });
    const rssMB = rssKiB(child.proc.pid) / 1024;
    const lag = await pacedLag(cluster, child, pacedSeconds);
    return { rate, lag, rssMB, startupLagMs };
  } finally {
    await child.stop();
    await api.stop();
  }
}

export async function allSourcesCase(dir: string, options: SourcesCaseOptions): Promise<void> {
  if (options.rounds === 0) {
    await soaks(dir, options.soakMinutes);
    return;
  }
  const runs: Record<
    Mode,
    Array<{ rate: number; lag: [number, number, number]; rssMB: number; startupLagMs: number }>
  > = {
    raw: [],
    workers: [],
    main: [],
  };
  for (let round = 1; round <= options.rounds; round++)
    for (const mode of ["raw", "workers", "main"] as const) {
      const run = await oneRun(dir, mode, options.events, `${mode}-${round}`, options.pacedSeconds);
      runs[mode].push(run);
      log(`round ${round} ${mode}: ${run.rate.toFixed(0)} events/s, main-thread lag p99 ${fmt(run.lag[1])} ms`);
    }
  const raw = median(runs.raw.map((run) => run.rate));
  const row = (label: string, mode: Mode) => {
    const rate = median(runs[mode].map((run) => run.rate));
    return [
      label,
      fmt(rate),
      runs[mode].map((run) => run.rate.toFixed(0)).join(", "),
      fmt(rate / raw),
      fmt(median(runs[mode].map((run) => run.lag[1]))),
      fmt(median(runs[mode].map((run) => run.lag[2]))),
      fmt(median(runs[mode].map((run) => run.startupLagMs))),
      fmt(median(runs[mode].map((run) => run.rssMB))),
    ];
  };
  console.log(
    `### Every portable source: ${SHAPE.pods} pods, ${SHAPE.nodes} nodes, 1,000 events per simulated second (median of rounds)\n`,
  );
  console.log(
    table(
      [
        "case",
        "events/s (closed loop)",
        "rounds",
        "ratio to raw",
        "lag p99 ms at 1,000/s",
        "lag max ms",
        "lag max ms, start",
        "RSS MB",
      ],
      [
        row("raw list+watch (baseline)", "raw"),
        row("watcher, --sources=auto, sources in workers", "workers"),
        row("watcher, --sources=auto, sources on the main thread", "main"),
      ],
    ),
  );
  const soak = await soaks(dir, options.soakMinutes);
  if (options.json) await Bun.write(options.json, JSON.stringify({ runs, soak }, null, 2));
}

async function soakRun(dir: string, minutes: number, mode: "workers" | "main") {
  const api = await startFakeApiserver({ historyLimit: 2 * WINDOW + 20_000 });
  const cluster = new Cluster(api, SHAPE);
  const child = await spawnChild(
    "watcher",
    writeKubeconfig(join(dir, `kc-sources-soak-${mode}`), { server: api.url }),
    {
      flags: FLAGS,
      env: mode === "main" ? { SPAR_BENCH_SOURCE_THREADS: "main" } : {},
    },
  );
  try {
    const simStart = Date.now();
    await closedLoop(cluster, child, { events: 2000, simStart: simStart - 60_000, simStepMs: SIM_STEP_MS });
    const started = nowMs();
    const soak = await closedLoop(cluster, child, { events: minutes * 60_000, simStart, simStepMs: SIM_STEP_MS });
    return {
      mode,
      rssMB: soak.rss.map((kib) => kib / 1024),
      eventsPerSecond: soak.rate,
      realSeconds: (nowMs() - started) / 1000,
    };
  } finally {
    await child.stop();
    await api.stop();
  }
}

async function soaks(dir: string, minutes: number) {
  const runs = [await soakRun(dir, minutes, "workers"), await soakRun(dir, minutes, "main")];
  const marks = [0, 5, 10, 15, 20, 25, 30].filter((minute) => minute <= minutes);
  const pick = (series: number[], minute: number) => fmt(series[Math.min(series.length - 1, minute)] ?? Number.NaN);
  console.log(`\n### Soak with every portable source: ${minutes} simulated minutes at 1,000 events/s\n`);
  console.log(
    table(
      ["child RSS (MB) at simulated minute", ...marks.map(String), "max", "events/s", "real s"],
      runs.map((run) => [
        run.mode === "workers" ? "sources in workers" : "sources on the main thread",
        ...marks.map((minute) => pick(run.rssMB, minute)),
        fmt(Math.max(...run.rssMB)),
        fmt(run.eventsPerSecond),
        fmt(run.realSeconds),
      ]),
    ),
  );
  return runs;
}
