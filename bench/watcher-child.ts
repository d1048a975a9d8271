/**
 * The process under test for bench/watcher.ts (spawned with Bun IPC):
 *   bun bench/watcher-child.ts watcher KUBECONFIG   the real pipeline: startWatcher with the dry-run
 *                                                   sink, the pipeline clock set by the parent
 *   bun bench/watcher-child.ts raw KUBECONFIG       the baseline: the same list+watch of events over
 *                                                   Bun's fetch, each line parsed and counted, no pipeline
 * Every 100 ms it sends {seen, injected, heap, lag, gauges}; each opening payload is reported on stdout as
 * `inj <pod name> <nowMs>` (the parent computes event-to-inject latency on the shared clock).
 * `lag` is the main thread's event-loop lag since the parent's last `{lagReset: true}`: a 10 ms
 * timer's lateness, as p50, p99 and max in ms. SPAR_BENCH_SOURCE_THREADS=main runs the sources
 * on the main thread instead of their workers (the comparison the workers are for).
 * SPAR_BENCH_SINK=daemon drops `--dry-run`: the real daemon sink, pointed by the extra flags
 * (`--daemon-url`, `--token-env`) at a fake daemon (bench/watcher-fake-daemon.ts).
 */
import { watcherConfigFromArgv } from "../src/cli/watcher-config.ts";
import { createLogger } from "../src/telemetry/logger.ts";
import { BunWatch, listFunction } from "../src/watcher/kube/bun-watch.ts";
import { loadKubeConnection } from "../src/watcher/kube/kube-connection.ts";
import { startWatcher } from "../src/watcher/watch-runner.ts";
import { nowMs } from "./lib.ts";

const [mode, kubeconfig, ...extraFlags] = process.argv.slice(2);
if (!kubeconfig || (mode !== "watcher" && mode !== "raw"))
  throw new Error("usage: watcher-child.ts watcher|raw KUBECONFIG");
let sim = Date.now();
let seen = 0;
let injected = 0;
const LAG_TICK_MS = 10;
let lags: number[] = [];
let expected = performance.now() + LAG_TICK_MS;
setInterval(() => {
  const at = performance.now();
  if (lags.length < 1_000_000) lags.push(Math.max(0, at - expected));
  expected = at + LAG_TICK_MS;
}, LAG_TICK_MS);
const lagQuantiles = (): [number, number, number] => {
  const sorted = [...lags].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return [at(0.5), at(0.99), sorted.at(-1) ?? 0];
};
process.on("message", (message: { sim?: number; lagReset?: boolean }) => {
  if (typeof message.sim === "number") sim = message.sim;
  if (message.lagReset) lags = [];
});

const out: string[] = [];
const flush = () => {
  if (out.length > 0) process.stdout.write(out.splice(0).join(""));
};

let count: () => number = () => seen;
/** Gauges reported with each count (the routing soak's bounds): the dedup cache and recovery's tracked incidents. */
const GAUGES = ["active_incidents", "recovery_tracking"] as const;
const gauges: Record<string, number> = {};
if (mode === "raw") {
  const connection = loadKubeConnection({ inCluster: false, kubeconfig });
  const list = await listFunction(connection, "/api/v1/events")();
  await new BunWatch(connection).watch(
    "/api/v1/events",
    { resourceVersion: list.metadata.resourceVersion },
    (_phase, object) => {
      if (object) seen++;
    },
    (error) => {
      if (error) console.error("raw watch ended:", error);
    },
  );
} else {
  const config = watcherConfigFromArgv([
    ...(process.env.SPAR_BENCH_SINK === "daemon" ? [] : ["--dry-run"]),
    `--kubeconfig=${kubeconfig}`,
    "--cluster-name=bench",
    "--storm=off",
    "--backoff-min-count=1",
    "--snapshot-interval=0",
    ...extraFlags,
  ]);
  if (!config.ok) throw new Error(config.error);
  const running = await startWatcher(config.value, createLogger("warn"), {
    now: () => sim,
    sourceThreads: process.env.SPAR_BENCH_SOURCE_THREADS === "main" ? "main" : "workers",
    stdout: (text) => {
      injected++;
      if (!text.includes('"kind": "cluster-event"')) return;
      out.push(`inj ${/"name": "([^"]+)"/.exec(text)?.[1] ?? "?"} ${nowMs()}\n`);
    },
  });
  count = () => {
    let total = 0;
    const text = running.metrics.render();
    for (const match of text.matchAll(/^watcher_events_seen_total\{[^}]*\} (\d+)$/gm)) total += Number(match[1]);
    for (const name of GAUGES)
      gauges[name] = Number(new RegExp(`^watcher_${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text)?.[1]);
    return total;
  };
}
process.send?.({ ready: true });
setInterval(() => {
  flush();
  process.send?.({ seen: count(), injected, heap: process.memoryUsage().heapUsed, lag: lagQuantiles(), gauges });
}, 100);
if (process.env.BENCH_MEMLOG) {
  const { heapStats } = await import("bun:jsc");
  setInterval(
    () =>
      console.error(
        JSON.stringify({ ...process.memoryUsage(), jscHeap: heapStats().heapSize, objects: heapStats().objectCount }),
      ),
    3000,
  );
}
