/**
 * The service half of the object-state detector (D376): a Service's ready endpoints summed over
 * its EndpointSlices (label kubernetes.io/service-name) going from above zero to zero
 * (`endpoints_empty`, critical, the Service UID from the slices' owner reference, else
 * `service:<ns>/<name>`), and a PodDisruptionBudget's disruptionsAllowed going from above zero to
 * zero while it still has pods (`pdb_gridlocked`, warning). A Service whose last slice is deleted
 * is gone, not empty. Each clears when the count is above zero again. Pure.
 */
import type { Signal } from "../signal.ts";
import type { KubeObject, ObjectChange } from "../source-spec.ts";
import { type Meta, type ObjectStateSettings, meta, objectStateSignal } from "./object-state-common.ts";

const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

interface Endpoint {
  conditions?: { ready?: boolean };
}

function readyEndpoints(slice: KubeObject): number {
  const endpoints = (slice.endpoints ?? []) as Endpoint[];
  // An unset `ready` means ready (discovery.k8s.io/v1 semantics).
  return endpoints.filter((endpoint) => endpoint.conditions?.ready !== false).length;
}

interface ServiceState {
  namespace: string;
  name: string;
  uid: string;
  slices: Map<string, number>;
  ready: number;
  seen: number;
}

export class ServiceTracker {
  readonly #services = new Map<string, ServiceState>();

  constructor(private readonly settings: ObjectStateSettings) {}

  get size(): number {
    return this.#services.size;
  }

  observe(change: ObjectChange, slice: KubeObject, now: number): Signal[] {
    const current = meta(slice);
    const service = current.labels[SERVICE_NAME_LABEL];
    if (!service) return [];
    const key = `${current.namespace}/${service}`;
    const owner = current.ownerReferences.find((one) => one.kind === "Service" && one.uid);
    let state = this.#services.get(key);
    if (!state) {
      if (change === "delete") return [];
      state = { namespace: current.namespace, name: service, uid: "", slices: new Map(), ready: 0, seen: now };
      this.#services.set(key, state);
    }
    state.uid = owner?.uid ?? state.uid;
    state.seen = now;
    if (change === "delete") state.slices.delete(current.uid);
    else state.slices.set(current.uid, readyEndpoints(slice));
    if (state.slices.size === 0) {
      this.#services.delete(key);
      return [];
    }
    const before = state.ready;
    state.ready = [...state.slices.values()].reduce((sum, count) => sum + count, 0);
    if (before === 0 || state.ready > 0) return [];
    const object: Meta = { uid: "", name: state.name, namespace: state.namespace, labels: {}, ownerReferences: [] };
    return [
      objectStateSignal({
        reason: "endpoints_empty",
        object,
        uid: state.uid || `service:${state.namespace}/${state.name}`,
        kindOfObject: "Service",
        severity: "critical",
        message: `service ${state.namespace}/${state.name} has no ready endpoints (had ${before} across ${state.slices.size} EndpointSlices)`,
        now,
      }),
    ];
  }

  tick(now: number): void {
    for (const [key, state] of this.#services)
      if (now - state.seen > this.settings.stateTtlMs) this.#services.delete(key);
  }
}

interface BudgetState {
  allowed: number;
  seen: number;
}

export class BudgetTracker {
  readonly #budgets = new Map<string, BudgetState>();

  constructor(private readonly settings: ObjectStateSettings) {}

  get size(): number {
    return this.#budgets.size;
  }

  observe(change: ObjectChange, pdb: KubeObject, now: number): Signal[] {
    const current = meta(pdb);
    if (change === "delete") {
      this.#budgets.delete(current.uid);
      return [];
    }
    const status = (pdb.status ?? {}) as {
      disruptionsAllowed?: number;
      currentHealthy?: number;
      expectedPods?: number;
    };
    const allowed = status.disruptionsAllowed ?? 0;
    const pods = Math.max(status.expectedPods ?? 0, status.currentHealthy ?? 0);
    const state = this.#budgets.get(current.uid);
    this.#budgets.set(current.uid, { allowed, seen: now });
    if (!state || state.allowed === 0 || allowed > 0 || pods === 0) return [];
    return [
      objectStateSignal({
        reason: "pdb_gridlocked",
        object: current,
        kindOfObject: "PodDisruptionBudget",
        severity: "warning",
        message: `PodDisruptionBudget allows no disruptions (was ${state.allowed}; ${status.currentHealthy ?? 0} healthy of ${status.expectedPods ?? 0} expected pods): drains and evictions of its pods are blocked`,
        now,
      }),
    ];
  }

  tick(now: number): void {
    for (const [uid, state] of this.#budgets)
      if (now - state.seen > this.settings.stateTtlMs) this.#budgets.delete(uid);
  }
}
