/**
 * The `topology-drift` source (docs/watcher.md#topology-drift; spar's own design, D21, D406-D410).
 * Watches nodes, pods, Deployments and StatefulSets. Axes are the node labels of
 * `--topology-keys` in precedence order; their values are the domains. Every sweep judges each
 * workload on each axis against its intent (topology-intent.ts): a drift that lasts
 * `--topology-dwell` is one `leeway.spread_drift` finding per workload (tiers A and B always;
 * tier C only with `--topology-tier-c-signals`), forgotten when no axis drifts any more. Node groups
 * (D410) are judged the same way against `--topology-capacity-ratio`. `leeway.domain_unavailable`
 * comes from the node index (topology-nodes.ts). The per-domain series are read by the host at
 * scrape time through `series()` (topology-series.ts). The first list fills state; findings come
 * from the sweep, so a drift present at startup is reported once the dwell has passed. Pure.
 */
import { goDuration } from "../go-time.ts";
import type { Signal } from "../signal.ts";
import type { Detector, KubeObject, ObjectChange, SourceSpec } from "../source-spec.ts";
import { nodeMatcher, type SeriesFamily } from "./leeway-fields.ts";
import { listWatch, sourceSignal } from "./source-fields.ts";
import {
  type AxisIntent,
  axisIntent,
  baselineCeiling,
  type DefaultConstraint,
  type Judged,
  learn,
  type Spread,
  scored,
  spread,
  UPSTREAM_DEFAULTS,
} from "./topology-intent.ts";
import { NodeIndex, type NodeIndexSettings } from "./topology-nodes.ts";
import { type PerDomainSettings, topologySeries } from "./topology-series.ts";
import { type AxisState, type Subject, SubjectIndex } from "./topology-subjects.ts";

export interface TopologySettings extends NodeIndexSettings {
  defaults: readonly DefaultConstraint[];
  tierCSignals: boolean;
  learnBaselines: boolean;
  baselineBand: number;
  baselineHalfLifeMs: number;
  capacityRatio: number;
  perDomain: PerDomainSettings;
}

/** The built-in node-group labels, compute class first (D410). */
export const NODE_GROUP_KEYS: readonly string[] = [
  "cloud.google.com/compute-class",
  "cloud.google.com/gke-nodepool",
  "eks.amazonaws.com/nodegroup",
  "karpenter.sh/nodepool",
  "kubernetes.azure.com/agentpool",
  "node.kubernetes.io/node-group",
];

export const TOPOLOGY_DEFAULTS: TopologySettings = {
  keys: ["topology.kubernetes.io/zone", "topology.kubernetes.io/region"],
  unavailableKeys: ["topology.kubernetes.io/zone", "topology.kubernetes.io/region"],
  dwellMs: 10 * 60_000,
  domainMemoryMs: 24 * 3600_000,
  nodeGroupKeys: NODE_GROUP_KEYS,
  maxNodeGroups: 200,
  defaults: UPSTREAM_DEFAULTS,
  tierCSignals: false,
  learnBaselines: true,
  baselineBand: 4,
  baselineHalfLifeMs: 12 * 3600_000,
  capacityRatio: 1.25,
  perDomain: { collapseStates: true, excludeNamespaces: [], namespaces: [], maxKeys: 4, minDrift: 0.05, every: false },
};

export class TopologyDriftDetector implements Detector {
  readonly nodes: NodeIndex;
  readonly subjects = new SubjectIndex();
  /** Each subject's (and node group's) last judgement per axis, for the series. */
  readonly judged = new Map<string, Judged[]>();
  readonly #groupStates = new Map<string, { since?: number | undefined; fired: boolean }>();

  constructor(readonly settings: TopologySettings) {
    this.nodes = new NodeIndex(settings);
  }

  get size(): { nodes: number; domains: number; groups: number; subjects: number; pods: number; judged: number } {
    return { ...this.nodes.size, ...this.subjects.size, judged: this.judged.size };
  }

  /** The first list only fills state like any change: findings come from the sweep (`_initial` unused). */
  observe(watch: string, change: ObjectChange, object: KubeObject, now: number, _initial = false): Signal[] {
    if (watch === "nodes") this.nodes.observe(change, object, now);
    else if (watch === "pods") this.subjects.pod(change, object);
    else if (watch === "deployments") this.subjects.workload("Deployment", change, object);
    else if (watch === "statefulsets") this.subjects.workload("StatefulSet", change, object);
    return [];
  }

  tick(now: number): Signal[] {
    const signals = this.nodes.tick(now);
    const eligible = new Map<string, Set<string>>();
    for (const [key, subject] of this.subjects.subjects) {
      const found = this.#judgeSubject(key, subject, now, eligible);
      if (found) signals.push(found);
    }
    for (const key of this.judged.keys())
      if (!key.startsWith("nodegroup:") && !this.subjects.subjects.has(key)) this.judged.delete(key);
    signals.push(...this.#judgeGroups(now));
    return signals;
  }

  series(): SeriesFamily[] {
    return topologySeries(this);
  }

  #judgeSubject(key: string, subject: Subject, now: number, cache: Map<string, Set<string>>): Signal | undefined {
    const spec = this.subjects.intentSpec(subject);
    const matcherKey = JSON.stringify([spec.nodeSelector, spec.affinity]);
    const accepts = nodeMatcher(spec);
    const results: Judged[] = [];
    let due: Judged | undefined;
    for (const axis of this.settings.keys) {
      const intent = axisIntent(spec, axis, this.settings.defaults);
      const cacheKey = `${axis}|${matcherKey}`;
      const domains = cache.get(cacheKey) ?? this.nodes.eligibleDomains(axis, accepts);
      cache.set(cacheKey, domains);
      const counts = new Map([...domains].map((domain) => [domain, 0]));
      for (const uid of subject.pods) {
        const pod = this.subjects.pods.get(uid);
        const domain =
          pod && (pod.state === "running" || pod.state === "starting")
            ? this.nodes.nodes.get(pod.node)?.labels[axis]
            : undefined;
        if (domain !== undefined && counts.has(domain)) counts.set(domain, (counts.get(domain) ?? 0) + 1);
      }
      const state = subject.axes.get(axis) ?? {};
      subject.axes.set(axis, state);
      const judged = this.#judgeAxis(intent, spread(counts, intent.minDomains), state, now);
      results.push(judged);
      const dueNow = judged.drifting && now - (state.driftSince ?? now) >= this.settings.dwellMs;
      if (dueNow && !due && (intent.tier !== "C" || this.settings.tierCSignals)) due = judged;
    }
    this.judged.set(key, results);
    if (!results.some((one) => one.drifting)) subject.fired = false;
    if (!due || subject.fired) return undefined;
    subject.fired = true;
    return this.#signal(subject, due, now);
  }

  #judgeAxis(intent: AxisIntent, result: Spread, state: AxisState, now: number): Judged {
    let ceiling = intent.maxSkew;
    let drifting = false;
    if (scored(result)) {
      if (intent.tier !== "C") drifting = result.skew > intent.maxSkew;
      else if (!this.settings.learnBaselines) drifting = result.skew > 1;
      else {
        const before = state.baseline;
        const warmed = before !== undefined && now - before.since >= this.settings.baselineHalfLifeMs;
        ceiling = before ? baselineCeiling(before, this.settings.baselineBand) : Number.POSITIVE_INFINITY;
        drifting = warmed && result.skew > Math.max(1, ceiling);
        state.baseline = learn(before, result.skew, now, this.settings.baselineHalfLifeMs);
      }
    }
    if (drifting) state.driftSince ??= now;
    else state.driftSince = undefined;
    return { intent, spread: result, drifting, ceiling };
  }

  #judgeGroups(now: number): Signal[] {
    const signals: Signal[] = [];
    const seen = new Set<string>();
    const axis = this.settings.keys[0] ?? "";
    for (const group of this.nodes.nodeGroups()) {
      const key = `nodegroup:${group.name}`;
      seen.add(key);
      const usable = new Map([...group.domains].map(([domain, counts]) => [domain, counts.usable]));
      const result = spread(usable, 1);
      const values = [...usable.values()];
      const max = Math.max(0, ...values);
      const min = Math.min(...values);
      const ratio = min > 0 ? max / min : Number.POSITIVE_INFINITY;
      const drifting = usable.size >= 2 && max >= 2 && max - min > 1 && ratio > this.settings.capacityRatio;
      const intent: AxisIntent = { key: axis, tier: "B", maxSkew: 1, minDomains: 1, origin: "cluster default" };
      this.judged.set(key, [{ intent, spread: result, drifting, ceiling: this.settings.capacityRatio }]);
      const state: { since?: number | undefined; fired: boolean } = this.#groupStates.get(key) ?? { fired: false };
      this.#groupStates.set(key, state);
      if (!drifting) {
        state.since = undefined;
        state.fired = false;
        continue;
      }
      state.since ??= now;
      if (state.fired || now - state.since < this.settings.dwellMs) continue;
      state.fired = true;
      const layout = [...usable].map(([domain, count]) => `${domain}=${count}`).join(", ");
      signals.push(
        sourceSignal({
          kind: "leeway.spread_drift",
          reason: "spread_drift",
          object: { namespace: "", name: group.name, uid: key },
          kindOfObject: "NodeGroup",
          severity: "warning",
          now,
          message: `node group ${group.name} has usable nodes ${layout} over ${axis}: largest/smallest ${ratio === Number.POSITIVE_INFINITY ? "∞" : ratio.toFixed(2)} above --topology-capacity-ratio ${this.settings.capacityRatio}, for ${goDuration(now - state.since)}`,
        }),
      );
    }
    for (const key of [...this.judged.keys(), ...this.#groupStates.keys()])
      if (key.startsWith("nodegroup:") && !seen.has(key)) {
        this.judged.delete(key);
        this.#groupStates.delete(key);
      }
    return signals;
  }

  #signal(subject: Subject, judged: Judged, now: number): Signal {
    const { workload } = subject;
    const { intent, spread: result } = judged;
    const state = subject.axes.get(intent.key);
    const layout = [...result.counts].map(([domain, count]) => `${domain}=${count}`).join(", ");
    const tolerated =
      intent.tier === "C"
        ? this.settings.learnBaselines
          ? `its learned baseline (at most ${judged.ceiling.toFixed(1)})`
          : "an even spread (skew at most 1; no intent declared)"
        : `maxSkew ${intent.maxSkew} (${intent.origin})`;
    return sourceSignal({
      kind: "leeway.spread_drift",
      reason: "spread_drift",
      object: { namespace: workload.namespace, name: workload.name, uid: subject.uid },
      kindOfObject: workload.kind,
      severity: "warning",
      now,
      message: `${workload.kind} ${workload.namespace}/${workload.name} spreads ${layout} over ${intent.key}: skew ${result.skew} beyond ${tolerated}, tier ${intent.tier}, for ${goDuration(now - (state?.driftSince ?? now))}`,
    });
  }
}

export const TOPOLOGY_DRIFT_SPEC: SourceSpec<TopologySettings> = {
  name: "topology-drift",
  reasons: ["domain_unavailable", "spread_drift"],
  scope: "cluster",
  required: [
    ...listWatch("", "nodes"),
    ...listWatch("", "pods"),
    ...listWatch("apps", "deployments"),
    ...listWatch("apps", "statefulsets"),
  ],
  watches: [
    { name: "nodes", path: "/api/v1/nodes" },
    { name: "pods", path: "/api/v1/pods" },
    { name: "deployments", path: "/apis/apps/v1/deployments" },
    { name: "statefulsets", path: "/apis/apps/v1/statefulsets" },
  ],
  tickMs: 30_000,
  detector: (settings) => new TopologyDriftDetector(settings),
};
