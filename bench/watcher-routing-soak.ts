/**
 * bench/watcher.ts --case=routing-soak (issue 32's memory benchmark): the real watcher in the
 * child with the daemon sink against a healthy fake daemon (bench/watcher-fake-daemon.ts),
 * `--sources=cluster-events,capacity` and the occurrence store on (`--store`, bounded by
 * `--store-max-mb`), fed 1,000 events/s of real time for `--soak-minutes` (10) with severity
 * routing on (per-incident mode, the default):
 *
 * - half are kubelet `BackOff` events (cluster-events: a crash loop, **critical**) on a pool of
 *   500 pods, ten a second a fresh pod (a new incident: enriched, its own session) replacing
 *   the oldest of 2,000 churn pods, whose deletion later resolves it;
 * - three in ten are the cluster-autoscaler's `NotTriggerScaleUp` (capacity: `capacity.pending`,
 *   a **warning**, to the watchboard) on a pool of 300 pending pods, ten a second a new pod;
 * - two in ten are its `TriggeredScaleUp` (`capacity.scaleup`, **info**: stored, never paged) on a
 *   pool of 200, ten a second new.
 * New incidents at a steady rate are the churn the store's and the watcher's bounds must hold
 * under; the repeats are rows too (`suppressed`), so the store reaches its size bound early.
 *
 * Every `--sample-s` (30) the child's RSS and the store's size on disk (the database, its WAL and
 * shared memory, the pending-inject journal beside it) are sampled; printed as a table with the
 * least-squares slope over the last half of the run and whether it is flat there (the slope
 * projects under 10 % growth of the last half's median over the last half).
 */
import { mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { autoscalerEvent } from "../scripts/fake-apiserver/builders-capacity.ts";
import { writeKubeconfig } from "../scripts/fake-apiserver/kubeconfig.ts";
import { type FakeApiserver, startFakeApiserver } from "../scripts/fake-apiserver/server.ts";
import { fmt, median, nowMs, rssKiB, table } from "./lib.ts";
import { startFakeDaemon } from "./watcher-fake-daemon.ts";
import { daemonChild } from "./watcher-judgement.ts";
import { Cluster, log, sleep, spawnChild } from "./watcher-lib.ts";

export interface RoutingSoakOptions {
  minutes: number;
  /** Events offered per second of real time. */
  rate: number;
  storeMaxMb: number;
  sampleSeconds: number;
  /** Crash-looping churn pods kept before the oldest is deleted (and each autoscaler reason's events). */
  churn: number;
  /** Extra watcher flags for the child (`--watcher-flags`). */
  flags: string[];
  json?: string | undefined;
}

type Obj = Record<string, unknown>;

/** The autoscaler's events on a pool of pending pods (repeats) plus new pods; old events deleted. */
class AutoscalerTraffic {
  private readonly pool: Array<{ ref: Obj; event?: Obj }> = [];
  private readonly churn: Obj[] = [];
  private serial = 0;
  private next = 0;

  constructor(
    private readonly api: FakeApiserver,
    private readonly reason: string,
    pool: number,
    private readonly keep: number,
  ) {
    for (let i = 0; i < pool; i++) this.pool.push({ ref: this.ref() });
  }

  private ref(): Obj {
    const name = `${this.reason.toLowerCase()}-${this.serial++}`;
    return { kind: "Pod", apiVersion: "v1", namespace: "pending", name, uid: crypto.randomUUID() };
  }

  private record(ref: Obj, at: number): Obj {
    return this.api.scenario.recordEvent({
      ...autoscalerEvent({ reason: this.reason, involvedObject: ref, message: `${this.reason} for ${ref.name}` }),
      lastTimestamp: new Date(at).toISOString(),
      distinct: true,
    } as never);
  }

  repeat(at: number): void {
    const slot = this.pool[this.next++ % this.pool.length] as { ref: Obj; event?: Obj };
    slot.event = slot.event
      ? this.api.scenario.update({
          ...slot.event,
          count: Number(slot.event.count ?? 1) + 1,
          lastTimestamp: new Date(at).toISOString(),
        })
      : this.record(slot.ref, at);
  }

  fresh(at: number): void {
    this.churn.push(this.record(this.ref(), at));
    if (this.churn.length <= this.keep) return;
    const old = (this.churn.shift()?.metadata ?? {}) as { namespace?: string; name?: string };
    this.api.scenario.delete({
      apiVersion: "v1",
      kind: "Event",
      namespace: old.namespace ?? "",
      name: String(old.name),
    });
  }
}

interface Sample {
  second: number;
  rssMb: number;
  storeMb: number;
  offered: number;
  seen: number;
  sessions: number;
  injects: number;
  /** The watcher's dedup entries and incidents tracked for recovery (its gauges). */
  dedup: number;
  tracked: number;
}

function dirBytes(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) total += statSync(join(dir, name)).size;
  return total;
}

/** Least-squares slope (per minute) of `value` over the samples at or after half the run. */
function lastHalf(
  samples: Sample[],
  value: (sample: Sample) => number,
): { slope: number; median: number; flat: boolean } {
  const end = samples.at(-1)?.second ?? 0;
  const half = samples.filter((sample) => sample.second >= end / 2);
  const xs = half.map((sample) => sample.second / 60);
  const ys = half.map(value);
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  const sxy = xs.reduce((sum, x, i) => sum + (x - mx) * ((ys[i] ?? 0) - my), 0);
  const sxx = xs.reduce((sum, x) => sum + (x - mx) ** 2, 0);
  const slope = sxx > 0 ? sxy / sxx : Number.NaN;
  const mid = median(ys);
  const span = (xs.at(-1) ?? 0) - (xs[0] ?? 0);
  return { slope, median: mid, flat: Number.isFinite(slope) && slope * span < 0.1 * mid };
}

/** One event of the mix for offer number `n` (5 critical, 3 warning, 2 info in ten). */
function offerOne(
  n: number,
  at: number,
  traffic: { crash: Cluster; pending: AutoscalerTraffic; scaleup: AutoscalerTraffic },
): void {
  const slot = n % 10;
  // One offer in a hundred per kind is a new incident (n % 100 is 0, 5 or 8): ten per second each.
  const fresh = n % 100 === (slot < 5 ? 0 : slot < 8 ? 5 : 8);
  if (slot < 5) {
    if (fresh) traffic.crash.fresh(at);
    else traffic.crash.repeat(at);
  } else if (slot < 8) {
    if (fresh) traffic.pending.fresh(at);
    else traffic.pending.repeat(at);
  } else if (fresh) traffic.scaleup.fresh(at);
  else traffic.scaleup.repeat(at);
}

export async function routingSoakCase(dir: string, options: RoutingSoakOptions): Promise<void> {
  const api = await startFakeApiserver({ historyLimit: 50_000 });
  const traffic = {
    crash: new Cluster(api, { pods: 500, nodes: 10, churn: options.churn }),
    pending: new AutoscalerTraffic(api, "NotTriggerScaleUp", 300, options.churn),
    scaleup: new AutoscalerTraffic(api, "TriggeredScaleUp", 200, options.churn),
  };
  const daemon = startFakeDaemon({ slowMs: 0 });
  const storeDir = join(dir, "routing-store");
  mkdirSync(storeDir, { recursive: true });
  const setup = daemonChild(daemon.url, [
    "--sources=cluster-events,capacity",
    `--store=${join(storeDir, "occurrences.db")}`,
    `--store-max-mb=${options.storeMaxMb}`,
    ...options.flags,
  ]);
  const child = await spawnChild("watcher", writeKubeconfig(join(dir, "kc-routing"), { server: api.url }), setup);
  const samples: Sample[] = [];
  try {
    const total = Math.round(options.minutes * 60 * options.rate);
    const started = nowMs();
    let offered = 0;
    let nextSample = 0;
    while (offered < total) {
      const elapsed = nowMs() - started;
      const due = Math.min(total, Math.floor((elapsed * options.rate) / 1000));
      const at = Date.now();
      for (; offered < due; offered++) offerOne(offered, at, traffic);
      child.proc.send({ sim: at });
      if (elapsed >= nextSample * 1000) {
        const sample = {
          second: Math.round(elapsed / 1000),
          rssMb: rssKiB(child.proc.pid) / 1024,
          storeMb: dirBytes(storeDir) / 1024 / 1024,
          offered,
          seen: child.seen,
          sessions: daemon.counts.creates,
          injects: daemon.counts.injects,
          dedup: child.gauges.active_incidents ?? Number.NaN,
          tracked: child.gauges.recovery_tracking ?? Number.NaN,
        };
        samples.push(sample);
        log(
          `  routing-soak ${sample.second} s: RSS ${fmt(sample.rssMb)} MB, store ${fmt(sample.storeMb)} MB, offered ${offered}, seen ${sample.seen}, sessions ${sample.sessions}, dedup ${sample.dedup}, tracked ${sample.tracked}`,
        );
        nextSample += options.sampleSeconds;
      }
      await sleep(10);
    }
    // pacing: the child reports every 100 ms; one last sample after the last offer.
    await sleep(1000);
    samples.push({
      second: Math.round((nowMs() - started) / 1000),
      rssMb: rssKiB(child.proc.pid) / 1024,
      storeMb: dirBytes(storeDir) / 1024 / 1024,
      offered,
      seen: child.seen,
      sessions: daemon.counts.creates,
      injects: daemon.counts.injects,
      dedup: child.gauges.active_incidents ?? Number.NaN,
      tracked: child.gauges.recovery_tracking ?? Number.NaN,
    });
  } finally {
    await child.stop();
    await daemon.stop();
    await api.stop();
  }
  report(samples, options, daemon.counts.byKind);
  if (options.json) await Bun.write(options.json, JSON.stringify({ routingSoak: samples }, null, 2));
}

function report(samples: Sample[], options: RoutingSoakOptions, byKind: Map<string, number>): void {
  console.log(
    `\n### Routing soak: ${fmt(options.rate)} events/s for ${options.minutes} min, severity routing on, --store-max-mb=${options.storeMaxMb}\n`,
  );
  console.log(
    table(
      [
        "second",
        "child RSS MB",
        "store on disk MB",
        "offered",
        "seen by the child",
        "sessions",
        "injects",
        "dedup entries",
        "recovery tracked",
      ],
      samples.map((sample) => [
        String(sample.second),
        fmt(sample.rssMb),
        fmt(sample.storeMb),
        String(sample.offered),
        String(sample.seen),
        String(sample.sessions),
        String(sample.injects),
        String(sample.dedup),
        String(sample.tracked),
      ]),
    ),
  );
  const rss = lastHalf(samples, (sample) => sample.rssMb);
  const store = lastHalf(samples, (sample) => sample.storeMb);
  console.log(
    `\n${table(
      ["last half of the run", "median MB", "slope MB/min", "flat (slope x span < 10 % of median)"],
      [
        ["child RSS", fmt(rss.median), fmt(rss.slope), rss.flat ? "yes" : "NO"],
        ["store on disk", fmt(store.median), fmt(store.slope), store.flat ? "yes" : "NO"],
      ],
    )}`,
  );
  const kinds = [...byKind].sort((a, b) => b[1] - a[1]);
  console.log(`\nPayloads the fake daemon took, by kind: ${kinds.map(([kind, n]) => `${kind} ${n}`).join(", ")}`);
}
