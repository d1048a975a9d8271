/**
 * The `saturation` source's judgement (docs/watcher.md#saturation, D389-D391). Series of usage
 * against a ceiling: a container's CPU and memory (metrics.k8s.io PodMetrics) against its
 * **limits** (from the pods list; a container without a limit has no series), and a PVC's used
 * bytes against its capacity (the kubelet's stats summary, one per node). Each answer adds a
 * sample per series at the metrics' own time (`timestamp`, a volume's `time`; else now); a sample
 * not newer than the last is the same scrape again and ignored. A least-squares line over the
 * samples of `--saturation-window` gives the slope; with at least 8 samples spanning at least half
 * the window, the time left is (ceiling − current) / slope, counted from the newest sample (D390).
 * `saturation.forecast` is a warning when that is under `--saturation-warn`, critical under 15m;
 * the severity latches (one warning, then one critical, never back down while open); the series
 * is forgotten (may page again) once the time left is beyond 2 × warn or the series stops growing.
 * Bounded: samples older than the window fall out, and at most `maxSamples` are kept (closer ones
 * fold into the newest); the series of a pod gone from the pods list, of a claim gone from every
 * answering node, or with no sample for a whole window is dropped. Pure.
 */
import { rfc3339 } from "../go-time.ts";
import type { OpenCondition } from "../open-conditions.ts";
import type { Signal } from "../signal.ts";
import type { Detector, KubeObject, ObjectChange } from "../source-spec.ts";
import { linearFit } from "./linear-fit.ts";
import { formatBytes, formatCores, parseQuantity } from "../quantity.ts";
import { controller, field, forecastBasis, type Meta, meta, text, time } from "./source-fields.ts";

export interface SaturationSettings {
  /** How often the metrics, the pods and the nodes' stats are read. */
  intervalMs: number;
  /** A forecast under this is a warning. */
  warnMs: number;
  /** A forecast under this is critical. */
  criticalMs: number;
  /** The regression window. */
  windowMs: number;
  /** Samples a forecast needs (and they must span half the window). */
  minSamples: number;
  /** Samples kept per series at most. */
  maxSamples: number;
}

export const SATURATION_DEFAULTS: SaturationSettings = {
  intervalMs: 30_000,
  warnMs: 3600_000,
  criticalMs: 15 * 60_000,
  windowMs: 90 * 60_000,
  minSamples: 8,
  maxSamples: 360,
};

/** The poll names the detector answers. */
export const SATURATION_POLLS = { metrics: "pod-metrics", pods: "pods", stats: "node-stats" } as const;

type Resource = "cpu" | "memory" | "pvc";

interface Sample {
  at: number;
  value: number;
}

interface Series {
  resource: Resource;
  uid: string;
  object: Meta;
  container?: string;
  node?: string;
  controllerRef?: string;
  /** The limit (CPU cores, memory bytes) or the claim's capacity (bytes). */
  ceiling: number;
  samples: Sample[];
  /** 0 nothing open, 1 warning sent, 2 critical sent. */
  level: 0 | 1 | 2;
  /** Claims: the node that last reported it. */
  seenOn?: string;
}

interface PodInfo {
  meta: Meta;
  node?: string;
  controllerRef?: string;
  /** Container → its limits (cores, bytes). */
  limits: Map<string, { cpu?: number; memory?: number }>;
}

/** One node's stats summary, or why it could not be read (its claims are kept). */
export interface NodeStats {
  node: string;
  summary?: unknown;
  error?: string;
}

function items(body: unknown): unknown[] {
  const list = field(body, "items");
  return Array.isArray(list) ? list : [];
}

function podInfo(object: KubeObject): PodInfo {
  const limits = new Map<string, { cpu?: number; memory?: number }>();
  const containers = field(object, "spec", "containers");
  for (const container of Array.isArray(containers) ? containers : []) {
    const name = text(field(container, "name"));
    const cpu = parseQuantity(field(container, "resources", "limits", "cpu"));
    const memory = parseQuantity(field(container, "resources", "limits", "memory"));
    limits.set(name, {
      ...(cpu !== undefined && cpu > 0 ? { cpu } : {}),
      ...(memory !== undefined && memory > 0 ? { memory } : {}),
    });
  }
  const owner = controller(object);
  const node = text(field(object, "spec", "nodeName"));
  return {
    meta: meta(object),
    limits,
    ...(node ? { node } : {}),
    ...(owner ? { controllerRef: `${owner.kind}/${owner.name}` } : {}),
  };
}

/** `~14m`, `~1h5m`, `under a minute`, `now`. */
function roughly(ms: number): string {
  if (ms <= 0) return "now";
  const minutes = Math.round(ms / 60_000);
  if (minutes < 1) return "under a minute";
  const hours = Math.floor(minutes / 60);
  return `~${hours > 0 ? `${hours}h` : ""}${minutes % 60 > 0 || hours === 0 ? `${minutes % 60}m` : ""}`;
}

export class SaturationDetector implements Detector {
  readonly #settings: SaturationSettings;
  readonly #pods = new Map<string, PodInfo>();
  readonly #series = new Map<string, Series>();

  constructor(settings: SaturationSettings) {
    this.#settings = settings;
  }

  get size(): { pods: number; series: number; samples: number } {
    const samples = [...this.#series.values()].reduce((sum, one) => sum + one.samples.length, 0);
    return { pods: this.#pods.size, series: this.#series.size, samples };
  }

  observe(_watch: string, _change: ObjectChange, _object: KubeObject, _now: number, _initial: boolean): Signal[] {
    return [];
  }

  /** Forecasts that paged and still hold: gone once the ETA moves beyond 2 × warn or the series is dropped (D437). */
  *open(): Iterable<OpenCondition> {
    for (const series of this.#series.values())
      if (series.level > 0) yield { uid: series.uid, reason: `forecast_${series.resource}` };
  }

  polled(poll: string, body: unknown, now: number, error?: string): Signal[] {
    if (error !== undefined || body === undefined) return [];
    if (poll === SATURATION_POLLS.pods) this.#podsListed(body);
    else if (poll === SATURATION_POLLS.metrics) return this.#metrics(body, now);
    else if (poll === SATURATION_POLLS.stats) return this.#stats(body as { nodes?: NodeStats[] }, now);
    return [];
  }

  /** The pods list: limits by pod; the series of a pod or container gone (or its limit removed) dropped. */
  #podsListed(body: unknown): void {
    this.#pods.clear();
    const uids = new Map<string, PodInfo>();
    for (const item of items(body)) {
      const pod = podInfo(item as KubeObject);
      this.#pods.set(`${pod.meta.namespace}/${pod.meta.name}`, pod);
      uids.set(pod.meta.uid, pod);
    }
    for (const [key, series] of this.#series) {
      if (series.resource === "pvc") continue;
      const pod = uids.get(series.uid.slice(0, series.uid.lastIndexOf("/")));
      const limit = series.container === undefined ? undefined : pod?.limits.get(series.container)?.[series.resource];
      if (limit === undefined) this.#series.delete(key);
      else series.ceiling = limit;
    }
  }

  #metrics(body: unknown, now: number): Signal[] {
    const signals: Signal[] = [];
    for (const item of items(body)) {
      const { namespace, name } = meta(item as KubeObject);
      const pod = this.#pods.get(`${namespace}/${name}`);
      if (!pod) continue;
      const at = time(field(item, "timestamp")) ?? now;
      const containers = field(item, "containers");
      for (const container of Array.isArray(containers) ? containers : []) {
        const containerName = text(field(container, "name"));
        const limits = pod.limits.get(containerName);
        for (const resource of ["cpu", "memory"] as const) {
          const ceiling = limits?.[resource];
          const value = parseQuantity(field(container, "usage", resource));
          if (ceiling === undefined || value === undefined) continue;
          const uid = `${pod.meta.uid}/${containerName}`;
          const series = this.#seriesFor(resource, uid, () => ({
            object: pod.meta,
            container: containerName,
            ...(pod.node ? { node: pod.node } : {}),
            ...(pod.controllerRef ? { controllerRef: pod.controllerRef } : {}),
          }));
          series.ceiling = ceiling;
          const signal = this.#observe(series, { at, value }, now);
          if (signal) signals.push(signal);
        }
      }
    }
    this.#dropStale(now, (series) => series.resource !== "pvc");
    return signals;
  }

  /** One round of the nodes' stats summaries: a sample per claim; claims gone from answering nodes dropped. */
  #stats(body: { nodes?: NodeStats[] }, now: number): Signal[] {
    const signals: Signal[] = [];
    const seen = new Set<string>();
    const failed = new Set<string>();
    for (const { node, summary, error } of body.nodes ?? []) {
      if (error !== undefined) failed.add(node);
      for (const pod of items({ items: field(summary, "pods") })) {
        for (const volume of items({ items: field(pod, "volume") })) {
          const claim = text(field(volume, "pvcRef", "name"));
          const namespace = text(field(volume, "pvcRef", "namespace"));
          const capacity = parseQuantity(field(volume, "capacityBytes"));
          const used = parseQuantity(field(volume, "usedBytes"));
          if (!claim || capacity === undefined || capacity <= 0 || used === undefined) continue;
          const uid = `pvc:${namespace}/${claim}`;
          seen.add(uid);
          const series = this.#seriesFor("pvc", uid, () => ({ object: { uid, namespace, name: claim } }));
          series.ceiling = capacity;
          series.node = node;
          series.seenOn = node;
          const signal = this.#observe(series, { at: time(field(volume, "time")) ?? now, value: used }, now);
          if (signal) signals.push(signal);
        }
      }
    }
    for (const [key, series] of this.#series)
      if (series.resource === "pvc" && !seen.has(series.uid) && !failed.has(series.seenOn ?? ""))
        this.#series.delete(key);
    this.#dropStale(now, (series) => series.resource === "pvc");
    return signals;
  }

  #seriesFor(
    resource: Resource,
    uid: string,
    identity: () => Pick<Series, "object" | "container" | "node" | "controllerRef">,
  ): Series {
    const key = `${resource}|${uid}`;
    let series = this.#series.get(key);
    if (!series) {
      series = { resource, uid, ceiling: 0, samples: [], level: 0, ...identity() };
      this.#series.set(key, series);
    }
    return series;
  }

  /** Adds the sample (if newer), trims the window, and judges the series. */
  #observe(series: Series, sample: Sample, now: number): Signal | undefined {
    const { samples } = series;
    const last = samples[samples.length - 1];
    if (last && sample.at <= last.at) return undefined;
    const before = samples[samples.length - 2];
    // Bounded: a sample closer than window/maxSamples to the one before the newest replaces the newest.
    if (last && before && sample.at - before.at < this.#settings.windowMs / this.#settings.maxSamples)
      samples[samples.length - 1] = sample;
    else samples.push(sample);
    const start = sample.at - this.#settings.windowMs;
    const inside = samples.findIndex((one) => one.at >= start);
    if (inside > 0) samples.splice(0, inside);
    return this.#judge(series, now);
  }

  #judge(series: Series, now: number): Signal | undefined {
    const { samples } = series;
    const first = samples[0];
    const last = samples[samples.length - 1];
    const { minSamples, windowMs, warnMs, criticalMs } = this.#settings;
    if (!first || !last || samples.length < minSamples || last.at - first.at < windowMs / 2) return undefined;
    const fit = linearFit(samples);
    if (!fit || fit.slope <= 0) {
      series.level = 0;
      return undefined;
    }
    const left = last.value >= series.ceiling ? 0 : (series.ceiling - last.value) / fit.slope;
    if (left > 2 * warnMs) {
      series.level = 0;
      return undefined;
    }
    const level = left < criticalMs ? 2 : left < warnMs ? 1 : 0;
    if (level === 0 || level <= series.level) return undefined;
    series.level = level;
    return this.#signal(series, level, left, fit.slope, now);
  }

  #signal(series: Series, level: 1 | 2, left: number, slope: number, now: number): Signal {
    const { samples } = series;
    const last = samples[samples.length - 1] as Sample;
    const span = last.at - (samples[0] as Sample).at;
    const show = series.resource === "cpu" ? formatCores : formatBytes;
    const perMinute = show(slope * 60_000);
    const what =
      series.resource === "pvc"
        ? `PVC ${series.object.namespace}/${series.object.name}${series.node ? ` (node ${series.node})` : ""}: ${show(last.value)} of its ${show(series.ceiling)} capacity`
        : `${series.resource === "cpu" ? "CPU" : "memory"} of container ${series.container} in pod ${series.object.namespace}/${series.object.name}: ${show(last.value)} of its ${show(series.ceiling)} limit`;
    const minutes = Math.round(span / 60_000);
    return {
      kind: "saturation.forecast",
      reason: `forecast_${series.resource}`,
      namespace: series.object.namespace,
      kindOfObject: series.resource === "pvc" ? "PersistentVolumeClaim" : "Pod",
      name: series.object.name,
      ...(series.container !== undefined ? { container: series.container } : {}),
      uid: series.uid,
      message: `${what}, growing ${perMinute}/min — ${left <= 0 ? "already there" : `reached in ${roughly(left)} at the observed trend`} (ETA ${rfc3339(last.at + left)}; ${forecastBasis(this.#settings.windowMs)}: ${samples.length} samples over ${minutes > 0 ? `${minutes}m` : `${Math.round(span / 1000)}s`})`,
      eventCount: 1,
      firstSeen: now,
      lastSeen: now,
      type: "",
      severity: level === 2 ? "critical" : "warning",
      ...(series.node ? { node: series.node } : {}),
      ...(series.controllerRef ? { controllerRef: series.controllerRef } : {}),
      forecast: { eta: last.at + Math.max(0, left), confidenceBasis: forecastBasis(this.#settings.windowMs) },
    };
  }

  /** Series of one kind with no sample for a whole window are dropped (metrics stopped for them). */
  #dropStale(now: number, which: (series: Series) => boolean): void {
    for (const [key, series] of this.#series) {
      const last = series.samples[series.samples.length - 1];
      if (which(series) && (!last || last.at < now - this.#settings.windowMs)) this.#series.delete(key);
    }
  }
}
