/**
 * `capacity.cluster_forecast` (D396): bin-packing per scheduling domain. A node's domain is the
 * first of NODE_GROUP_LABELS it carries (GKE node pool, EKS node group, Karpenter NodePool, AKS
 * agent pool, eksctl node group, then the instance type; else `default`). Each sample (one per
 * capacity poll) sums, per domain, the CPU and memory requests of the running pods bound to its
 * schedulable nodes against those nodes' allocatable; cordoned nodes and their pods are left out.
 * A least-squares line over the window (3h, at least 10 samples) gives the time until requests
 * reach allocatable: a warning when that ETA is 4h or less, critical at 1h or less, the sooner of
 * CPU and memory; uid `nodegroup:<domain>`. The level latches (sent once per level) and clears once
 * the trend no longer rises or its ETA moves past twice the warning horizon; a domain without
 * nodes is forgotten. Samples are kept only inside the window, at most MAX_SAMPLES per domain. Pure.
 */
import { goDuration } from "../go-time.ts";
import type { OpenCondition } from "../open-conditions.ts";
import type { Signal } from "../signal.ts";
import type { KubeObject, ObjectChange } from "../source-spec.ts";
import { parseQuantity } from "../quantity.ts";
import { field, forecastBasis, label, meta, sourceSignal, text } from "./source-fields.ts";

/** Labels naming a node's scheduling domain, most specific first (D396). */
export const NODE_GROUP_LABELS: readonly string[] = [
  "cloud.google.com/gke-nodepool",
  "eks.amazonaws.com/nodegroup",
  "karpenter.sh/nodepool",
  "karpenter.sh/provisioner-name",
  "kubernetes.azure.com/agentpool",
  "alpha.eksctl.io/nodegroup-name",
  "node.kubernetes.io/instance-type",
];

/** Samples kept per domain, whatever the poll interval. */
export const MAX_SAMPLES = 720;

export interface ForecastSettings {
  windowMs: number;
  minSamples: number;
  warnMs: number;
  criticalMs: number;
}

interface NodeShare {
  domain: string;
  schedulable: boolean;
  cpu: number;
  memory: number;
}

interface PodShare {
  node: string;
  cpu: number;
  memory: number;
}

interface Sample {
  at: number;
  cpu: number;
  memory: number;
}

interface Domain {
  samples: Sample[];
  level: 0 | 1 | 2;
  /** The latest totals, for the message. */
  totals: { cpu: [number, number]; memory: [number, number] };
}

/** A Kubernetes quantity (`250m`, `1.5`, `512Mi`, `1e3`) as a plain number; 0 when unreadable. */
export function quantity(value: unknown): number {
  return parseQuantity(value) ?? 0;
}

export function nodeDomain(node: KubeObject): string {
  for (const key of NODE_GROUP_LABELS) {
    const value = label(node, key);
    if (value) return value;
  }
  return "default";
}

function sumRequests(containers: unknown): { cpu: number; memory: number; maxCpu: number; maxMemory: number } {
  const totals = { cpu: 0, memory: 0, maxCpu: 0, maxMemory: 0 };
  for (const container of Array.isArray(containers) ? containers : []) {
    const cpu = quantity(field(container, "resources", "requests", "cpu"));
    const memory = quantity(field(container, "resources", "requests", "memory"));
    totals.cpu += cpu;
    totals.memory += memory;
    totals.maxCpu = Math.max(totals.maxCpu, cpu);
    totals.maxMemory = Math.max(totals.maxMemory, memory);
  }
  return totals;
}

/** What a pod asks of its node, as the scheduler counts it: its containers, or its largest init container if more, plus overhead. */
export function podRequests(pod: KubeObject): { cpu: number; memory: number } {
  const main = sumRequests(field(pod, "spec", "containers"));
  const init = sumRequests(field(pod, "spec", "initContainers"));
  return {
    cpu: Math.max(main.cpu, init.maxCpu) + quantity(field(pod, "spec", "overhead", "cpu")),
    memory: Math.max(main.memory, init.maxMemory) + quantity(field(pod, "spec", "overhead", "memory")),
  };
}

/** Least-squares slope (per ms) of values over time; undefined when the times do not spread. */
export function slope(samples: readonly { at: number; value: number }[]): number | undefined {
  const n = samples.length;
  if (n < 2) return undefined;
  const meanT = samples.reduce((sum, sample) => sum + sample.at, 0) / n;
  const meanV = samples.reduce((sum, sample) => sum + sample.value, 0) / n;
  let covariance = 0;
  let variance = 0;
  for (const sample of samples) {
    covariance += (sample.at - meanT) * (sample.value - meanV);
    variance += (sample.at - meanT) ** 2;
  }
  return variance > 0 ? covariance / variance : undefined;
}

export class BinPacking {
  readonly #settings: ForecastSettings;
  readonly #nodes = new Map<string, NodeShare>();
  readonly #pods = new Map<string, PodShare>();
  readonly #domains = new Map<string, Domain>();

  constructor(settings: ForecastSettings) {
    this.#settings = settings;
  }

  /** Objects held: nodes, bound pods, domains with samples. */
  get size(): { nodes: number; pods: number; domains: number; samples: number } {
    let samples = 0;
    for (const domain of this.#domains.values()) samples += domain.samples.length;
    return { nodes: this.#nodes.size, pods: this.#pods.size, domains: this.#domains.size, samples };
  }

  /** Domains whose forecast paged and still holds: gone once the ETA moves beyond 2 × warn (D437). */
  *open(): Iterable<OpenCondition> {
    for (const [name, domain] of this.#domains)
      if (domain.level > 0) yield { uid: `nodegroup:${name}`, reason: "cluster_forecast" };
  }

  observeNode(change: ObjectChange, node: KubeObject): void {
    const name = meta(node).name;
    if (change === "delete") {
      this.#nodes.delete(name);
      return;
    }
    this.#nodes.set(name, {
      domain: nodeDomain(node),
      schedulable: field(node, "spec", "unschedulable") !== true,
      cpu: quantity(field(node, "status", "allocatable", "cpu")),
      memory: quantity(field(node, "status", "allocatable", "memory")),
    });
  }

  observePod(change: ObjectChange, pod: KubeObject): void {
    const uid = meta(pod).uid;
    const node = text(field(pod, "spec", "nodeName"));
    const phase = text(field(pod, "status", "phase"));
    if (change === "delete" || node === "" || phase === "Succeeded" || phase === "Failed") {
      this.#pods.delete(uid);
      return;
    }
    this.#pods.set(uid, { node, ...podRequests(pod) });
  }

  /** Take one sample of every domain and judge its trend. */
  sample(now: number): Signal[] {
    const totals = new Map<string, { cpu: [number, number]; memory: [number, number] }>();
    for (const node of this.#nodes.values()) {
      if (!node.schedulable) continue;
      const sums = totals.get(node.domain) ?? { cpu: [0, 0], memory: [0, 0] };
      sums.cpu[1] += node.cpu;
      sums.memory[1] += node.memory;
      totals.set(node.domain, sums);
    }
    for (const pod of this.#pods.values()) {
      const node = this.#nodes.get(pod.node);
      const sums = node?.schedulable ? totals.get(node.domain) : undefined;
      if (!sums) continue;
      sums.cpu[0] += pod.cpu;
      sums.memory[0] += pod.memory;
    }
    for (const name of this.#domains.keys()) if (!totals.has(name)) this.#domains.delete(name);
    const signals: Signal[] = [];
    for (const [name, sums] of totals) {
      const domain = this.#domains.get(name) ?? { samples: [], level: 0, totals: sums };
      this.#domains.set(name, domain);
      domain.totals = sums;
      const ratio = ([used, allocatable]: [number, number]) => (allocatable > 0 ? used / allocatable : 0);
      domain.samples.push({ at: now, cpu: ratio(sums.cpu), memory: ratio(sums.memory) });
      const horizon = now - this.#settings.windowMs;
      while (domain.samples.length > MAX_SAMPLES || (domain.samples[0]?.at ?? now) < horizon) domain.samples.shift();
      const signal = this.#judge(name, domain, now);
      if (signal) signals.push(signal);
    }
    return signals;
  }

  /** The sooner of the CPU and memory ETAs, undefined when neither rises (or too few samples). */
  #eta(domain: Domain): { resource: "cpu" | "memory"; eta: number; slope: number; current: number } | undefined {
    if (domain.samples.length < this.#settings.minSamples) return undefined;
    let best: { resource: "cpu" | "memory"; eta: number; slope: number; current: number } | undefined;
    for (const resource of ["cpu", "memory"] as const) {
      const rising = slope(domain.samples.map((sample) => ({ at: sample.at, value: sample[resource] })));
      const current = domain.samples[domain.samples.length - 1]?.[resource] ?? 0;
      if (rising === undefined || rising <= 0) continue;
      const eta = Math.max(0, (1 - current) / rising);
      if (!best || eta < best.eta) best = { resource, eta, slope: rising, current };
    }
    return best;
  }

  #judge(name: string, domain: Domain, now: number): Signal | undefined {
    const { warnMs, criticalMs } = this.#settings;
    const forecast = this.#eta(domain);
    if (!forecast || forecast.eta > 2 * warnMs) {
      domain.level = 0;
      return undefined;
    }
    const level = forecast.eta <= criticalMs ? 2 : forecast.eta <= warnMs ? 1 : 0;
    if (level <= domain.level) return undefined;
    domain.level = level;
    const [used, allocatable] = domain.totals[forecast.resource];
    const amount = (value: number) =>
      forecast.resource === "cpu" ? `${value.toFixed(1)} cores` : `${(value / 2 ** 30).toFixed(1)}Gi`;
    const first = domain.samples[0]?.at ?? now;
    return sourceSignal({
      kind: "capacity.cluster_forecast",
      reason: "cluster_forecast",
      object: { uid: `nodegroup:${name}`, name, namespace: "" },
      kindOfObject: "NodeGroup",
      severity: level === 2 ? "critical" : "warning",
      now,
      forecast: { eta: now + forecast.eta, confidenceBasis: forecastBasis(this.#settings.windowMs) },
      message: `node group ${name}: ${forecast.resource} requests at ${(forecast.current * 100).toFixed(1)}% of allocatable (${amount(used)} of ${amount(allocatable)}), rising ${(forecast.slope * 3_600_000 * 100).toFixed(1)}%/h — full in ~${goDuration(Math.round(forecast.eta / 60_000) * 60_000)} at the observed trend (${domain.samples.length} samples over ${goDuration(now - first)})`,
    });
  }
}
