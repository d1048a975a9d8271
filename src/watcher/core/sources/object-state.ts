/**
 * The `object-state` source (docs/watcher.md#object-state, D376): informers on pods, nodes, deployments,
 * EndpointSlices and PodDisruptionBudgets; a detector that emits on transitions only, never on
 * creation (progress_deadline, a countdown, is the one level-triggered signal); a sweep every
 * 30 s for windows, countdowns, escalations and the 24 h expiry of per-object state. Its node
 * readiness also clears Node incidents, through the topology graph (D377). Pure.
 */
import type { Signal } from "../signal.ts";
import type { Detector, KubeObject, ObjectChange, SourceSpec } from "../source-spec.ts";
import { OBJECT_STATE_DEFAULTS, type ObjectStateSettings } from "./object-state-common.ts";
import { NodeTracker } from "./object-state-nodes.ts";
import { BudgetTracker, ServiceTracker } from "./object-state-services.ts";
import { DeploymentTracker, PodTracker } from "./object-state-workloads.ts";

export { OBJECT_STATE_DEFAULTS, type ObjectStateSettings } from "./object-state-common.ts";

export const OBJECT_STATE_TICK_MS = 30_000;

export class ObjectStateDetector implements Detector {
  readonly nodes: NodeTracker;
  readonly pods: PodTracker;
  readonly deployments: DeploymentTracker;
  readonly services: ServiceTracker;
  readonly budgets: BudgetTracker;

  constructor(settings: ObjectStateSettings = OBJECT_STATE_DEFAULTS) {
    this.nodes = new NodeTracker(settings);
    this.pods = new PodTracker(settings);
    this.deployments = new DeploymentTracker(settings);
    this.services = new ServiceTracker(settings);
    this.budgets = new BudgetTracker(settings);
  }

  observe(watch: string, change: ObjectChange, object: KubeObject, now: number, initial: boolean): Signal[] {
    const signals = this.#observe(watch, change, object, now);
    // Arm after sync: the first list fills state; only the countdown may report what it found.
    return initial ? signals.filter((signal) => signal.reason === "progress_deadline") : signals;
  }

  #observe(watch: string, change: ObjectChange, object: KubeObject, now: number): Signal[] {
    switch (watch) {
      case "nodes":
        return this.nodes.observe(change, object, now);
      case "pods": {
        const { signals, evictedFrom } = this.pods.observe(change, object, now);
        return evictedFrom ? [...signals, ...this.nodes.evicted(evictedFrom, now)] : signals;
      }
      case "deployments":
        return this.deployments.observe(change, object, now);
      case "endpointslices":
        return this.services.observe(change, object, now);
      case "poddisruptionbudgets":
        return this.budgets.observe(change, object, now);
      default:
        return [];
    }
  }

  tick(now: number): Signal[] {
    this.pods.tick(now);
    this.services.tick(now);
    this.budgets.tick(now);
    return [...this.nodes.tick(now), ...this.deployments.tick(now)];
  }
}

const listWatch = (group: string, resource: string) => [
  { verb: "list", group, resource },
  { verb: "watch", group, resource },
];

export const OBJECT_STATE_SPEC: SourceSpec<ObjectStateSettings> = {
  name: "object-state",
  reasons: [
    "node_notready",
    "node_flapping",
    "node_pressure",
    "eviction_burst",
    "restart_burst",
    "progress_deadline",
    "endpoints_empty",
    "pdb_gridlocked",
  ],
  scope: "cluster",
  required: [
    ...listWatch("", "pods"),
    ...listWatch("", "nodes"),
    ...listWatch("apps", "deployments"),
    ...listWatch("discovery.k8s.io", "endpointslices"),
    ...listWatch("policy", "poddisruptionbudgets"),
  ],
  watches: [
    { name: "nodes", path: "/api/v1/nodes" },
    { name: "pods", path: "/api/v1/pods" },
    { name: "deployments", path: "/apis/apps/v1/deployments" },
    { name: "endpointslices", path: "/apis/discovery.k8s.io/v1/endpointslices" },
    { name: "poddisruptionbudgets", path: "/apis/policy/v1/poddisruptionbudgets" },
  ],
  tickMs: OBJECT_STATE_TICK_MS,
  detector: (settings) => new ObjectStateDetector(settings),
};
