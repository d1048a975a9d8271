/**
 * The gateway source (D387): watches Gateway API (`gateway.networking.k8s.io/v1`) Gateways and
 * HTTPRoutes and fires when a `Programmed`, `Accepted` or `ResolvedRefs` condition (on the
 * Gateway, a listener, or a route's parent) is False with a reason other than `Pending`, written
 * for the object's current generation, and has been so for `--gateway-grace` (5m) counted from
 * its lastTransitionTime. Level-triggered: a failure that already passed the grace when the
 * source arms is reported at once. One page per object while any condition fails
 * (`gateway.programming_failed` for a Gateway, `gateway.route_rejected` for an HTTPRoute, both
 * warning); when none fails any more, or the object is deleted, it is forgotten and may fire
 * again. The tick fires the ones whose grace ran out between changes. Pure.
 */
import { rfc3339 } from "../go-time.ts";
import type { OpenCondition } from "../open-conditions.ts";
import type { Signal } from "../signal.ts";
import type { Detector, KubeObject, ObjectChange, SourceSpec } from "../source-spec.ts";

export interface GatewaySettings {
  /** `--gateway-grace`. */
  graceMs: number;
}

const WATCHED = new Set(["Programmed", "Accepted", "ResolvedRefs"]);
const GROUP = "gateway.networking.k8s.io";

interface Condition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}

/** One failing condition, where it sits (`listener https`, `parent shop/gw`). */
interface Failing {
  where: string;
  condition: Condition;
  since: number;
}

interface Tracked {
  object: { kind: string; namespace: string; name: string; uid: string };
  failing: Failing[];
  fired: boolean;
}

function conditions(value: unknown): Condition[] {
  return Array.isArray(value) ? (value as Condition[]) : [];
}

/** The conditions of an object, each with where it sits. */
function conditionsOf(watch: string, object: KubeObject): { where: string; condition: Condition }[] {
  const status = (object.status ?? {}) as {
    conditions?: unknown;
    listeners?: { name?: string; conditions?: unknown }[];
    parents?: { parentRef?: { name?: string; namespace?: string }; conditions?: unknown }[];
  };
  if (watch === "gateways")
    return [
      ...conditions(status.conditions).map((condition) => ({ where: "", condition })),
      ...(status.listeners ?? []).flatMap((listener) =>
        conditions(listener.conditions).map((condition) => ({ where: `listener ${listener.name ?? ""}`, condition })),
      ),
    ];
  return (status.parents ?? []).flatMap((parent) =>
    conditions(parent.conditions).map((condition) => ({
      where: `parent ${parent.parentRef?.namespace ? `${parent.parentRef.namespace}/` : ""}${parent.parentRef?.name ?? ""}`,
      condition,
    })),
  );
}

/** The conditions that count as failed for this generation. */
export function failingConditions(watch: string, object: KubeObject): Failing[] {
  const generation = (object.metadata as { generation?: number } | undefined)?.generation;
  return conditionsOf(watch, object).flatMap(({ where, condition }) => {
    if (!WATCHED.has(String(condition.type)) || condition.status !== "False" || condition.reason === "Pending")
      return [];
    if (condition.observedGeneration !== generation) return [];
    const since = Date.parse(condition.lastTransitionTime ?? "");
    return Number.isNaN(since) ? [] : [{ where, condition, since }];
  });
}

export class GatewayDetector implements Detector {
  readonly #tracked = new Map<string, Tracked>();

  constructor(private readonly settings: GatewaySettings) {}

  /** Level-triggered: the first list (`initial`) is judged like any change. */
  observe(watch: string, change: ObjectChange, object: KubeObject, now: number, _initial: boolean): Signal[] {
    const metadata = (object.metadata ?? {}) as { namespace?: string; name?: string; uid?: string };
    const uid = metadata.uid ?? `${watch}:${metadata.namespace}/${metadata.name}`;
    const failing = change === "delete" ? [] : failingConditions(watch, object);
    if (failing.length === 0) {
      this.#tracked.delete(uid);
      return [];
    }
    const kind = watch === "gateways" ? "Gateway" : "HTTPRoute";
    const before = this.#tracked.get(uid);
    const tracked: Tracked = {
      object: { kind, namespace: metadata.namespace ?? "", name: metadata.name ?? "", uid },
      failing,
      fired: before?.fired ?? false,
    };
    this.#tracked.set(uid, tracked);
    return this.#due(tracked, now);
  }

  tick(now: number): Signal[] {
    return [...this.#tracked.values()].flatMap((tracked) => this.#due(tracked, now));
  }

  /** Objects that paged and still fail: gone when no condition fails any more or on delete (D437). */
  *open(): Iterable<OpenCondition> {
    for (const { fired, object } of this.#tracked.values())
      if (fired) yield { uid: object.uid, reason: object.kind === "Gateway" ? "programming_failed" : "route_rejected" };
  }

  /** Objects with a failing condition now (the state is bounded by them). */
  get size(): number {
    return this.#tracked.size;
  }

  #due(tracked: Tracked, now: number): Signal[] {
    if (tracked.fired) return [];
    const overdue = tracked.failing.filter((failing) => now - failing.since >= this.settings.graceMs);
    if (overdue.length === 0) return [];
    tracked.fired = true;
    const { kind, namespace, name, uid } = tracked.object;
    const gateway = kind === "Gateway";
    const what = overdue
      .map(({ where, condition, since }) => {
        const detail = condition.message ? `: ${condition.message}` : "";
        return `${where ? `${where} ` : ""}${condition.type}=False (${condition.reason ?? ""}${detail}) since ${rfc3339(since)}`;
      })
      .join("; ");
    return [
      {
        kind: gateway ? "gateway.programming_failed" : "gateway.route_rejected",
        reason: gateway ? "programming_failed" : "route_rejected",
        namespace,
        kindOfObject: kind,
        name,
        uid,
        message: `${kind} ${namespace}/${name}: ${what}`,
        eventCount: 1,
        firstSeen: now,
        lastSeen: now,
        type: "",
        severity: "warning",
      },
    ];
  }
}

const listWatch = (resource: string) => [
  { verb: "list", group: GROUP, resource },
  { verb: "watch", group: GROUP, resource },
];

export const GATEWAY_SPEC: SourceSpec<GatewaySettings> = {
  name: "gateway",
  reasons: ["programming_failed", "route_rejected"],
  scope: "cluster",
  required: [...listWatch("gateways"), ...listWatch("httproutes")],
  discovery: {
    groupVersion: `${GROUP}/v1`,
    resources: ["gateways", "httproutes"],
    missing: "install the Gateway API CRDs",
  },
  watches: [
    { name: "gateways", path: `/apis/${GROUP}/v1/gateways` },
    { name: "httproutes", path: `/apis/${GROUP}/v1/httproutes` },
  ],
  // Fires a failure whose grace ran out between changes; the state holds failing objects only.
  tickMs: 1000,
  detector: (settings) => new GatewayDetector(settings),
};
