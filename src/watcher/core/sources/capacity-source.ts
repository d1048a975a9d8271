/**
 * The `capacity` source (docs/watcher.md#capacity): its own watch of the cluster-autoscaler's
 * events (capacity-events.ts), watches of pods and nodes, and a GET of the autoscaler's status
 * ConfigMap every `--capacity-poll` (1m). Each poll answer (or failure) is the source's
 * judgement: the status's scale-up gaps (capacity-gap.ts, when it answered), the pending pods'
 * ages (capacity-pending.ts) and one bin-packing sample per scheduling domain
 * (capacity-forecast.ts). Provider scale decisions have no provider in this build
 * (capacity-provider.ts, D397). The required grants include one named object in one namespace
 * (get `configmaps` `cluster-autoscaler-status` in `kube-system`), which the watcher's
 * ClusterRole does not give: the startup line says where it goes (D394). Pure.
 */
import type { AccessCheck } from "../access-check.ts";
import type { OpenCondition } from "../open-conditions.ts";
import type { Signal } from "../signal.ts";
import type { Detector, KubeObject, ObjectChange, SourcePoll, SourceSpec } from "../source-spec.ts";
import { capacityEventSignal, AUTOSCALER_COMPONENT } from "./capacity-events.ts";
import { BinPacking, type ForecastSettings } from "./capacity-forecast.ts";
import { ScaleUpGaps } from "./capacity-gap.ts";
import { PendingAging } from "./capacity-pending.ts";
import { parseAutoscalerStatus, type YamlParse } from "./capacity-status.ts";
import { listWatch, text } from "./source-fields.ts";

export interface CapacitySettings {
  pollMs: number;
  pendingWarnMs: number;
  /** max(15m, pendingWarnMs). */
  pendingCriticalMs: number;
  /** How long a scale-up gap lasts before it pages. */
  gapMs: number;
  forecast: ForecastSettings;
  /** The YAML reader for the status's newer shape (Bun's, given by the settings reader). */
  parseYaml: YamlParse;
}

const MINUTE = 60_000;

export const CAPACITY_DEFAULTS: Omit<CapacitySettings, "parseYaml"> = {
  pollMs: MINUTE,
  pendingWarnMs: 5 * MINUTE,
  pendingCriticalMs: 15 * MINUTE,
  gapMs: 3 * MINUTE,
  forecast: { windowMs: 180 * MINUTE, minSamples: 10, warnMs: 240 * MINUTE, criticalMs: 60 * MINUTE },
};

export const AUTOSCALER_STATUS = { namespace: "kube-system", name: "cluster-autoscaler-status" } as const;

export const CAPACITY_ACCESS: readonly AccessCheck[] = [
  ...listWatch("", "events"),
  ...listWatch("", "pods"),
  ...listWatch("", "nodes"),
  { verb: "get", group: "", resource: "configmaps", ...AUTOSCALER_STATUS },
];

function statusPoll(everyMs: number): SourcePoll {
  return {
    name: "autoscaler-status",
    path: `/api/v1/namespaces/${AUTOSCALER_STATUS.namespace}/configmaps/${AUTOSCALER_STATUS.name}`,
    everyMs,
  };
}

export class CapacityDetector implements Detector {
  readonly #settings: CapacitySettings;
  readonly gaps: ScaleUpGaps;
  readonly pending: PendingAging;
  readonly packing: BinPacking;

  constructor(settings: CapacitySettings) {
    this.#settings = settings;
    this.gaps = new ScaleUpGaps(settings.gapMs);
    this.pending = new PendingAging({ warnMs: settings.pendingWarnMs, criticalMs: settings.pendingCriticalMs });
    this.packing = new BinPacking(settings.forecast);
  }

  observe(watch: string, change: ObjectChange, object: KubeObject, now: number, initial: boolean): Signal[] {
    if (watch === "pods") {
      this.pending.observe(change, object, now);
      this.packing.observePod(change, object);
    } else if (watch === "nodes") this.packing.observeNode(change, object);
    else if (watch === "events" && !initial && change !== "delete") {
      const signal = capacityEventSignal(object, now);
      if (signal) return [signal];
    }
    return [];
  }

  /** Scale-up gaps, aged pending pods and cluster forecasts that paged and still hold (D437); events clear nothing. */
  *open(): Iterable<OpenCondition> {
    yield* this.gaps.open();
    yield* this.pending.open();
    yield* this.packing.open();
  }

  polled(_poll: string, body: unknown, now: number, error?: string): Signal[] {
    const signals: Signal[] = [];
    if (error === undefined) {
      const data = (body as { data?: Record<string, unknown> } | undefined)?.data ?? {};
      const status = parseAutoscalerStatus(text(data.status), this.#settings.parseYaml);
      if (status) signals.push(...this.gaps.judge(status, now));
    }
    signals.push(...this.pending.judge(now), ...this.packing.sample(now));
    return signals;
  }
}

export const CAPACITY_SPEC: SourceSpec<CapacitySettings> = {
  name: "capacity",
  // The provider kinds (stockout, quota_blocked, ip_exhausted) need a cloud provider this build lacks (D476).
  reasons: ["pending", "scaleup", "scaledown", "scaleup_gap", "pending-aged", "cluster_forecast"],
  scope: "cluster",
  required: CAPACITY_ACCESS,
  grantHint: "a Role and RoleBinding in kube-system: docs/watcher.md#capacity",
  watches: [
    { name: "events", path: "/api/v1/events", fieldSelector: `source=${AUTOSCALER_COMPONENT}` },
    { name: "pods", path: "/api/v1/pods" },
    { name: "nodes", path: "/api/v1/nodes" },
  ],
  polls: [statusPoll(CAPACITY_DEFAULTS.pollMs)],
  scoped: (settings) => ({ required: CAPACITY_ACCESS, polls: [statusPoll(settings.pollMs)] }),
  detector: (settings) => new CapacityDetector(settings),
};
