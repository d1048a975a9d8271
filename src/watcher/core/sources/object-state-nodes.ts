/**
 * The node half of the object-state detector (D376): Ready going True→False/Unknown
 * (`node_notready`, critical), Ready changing too often (`node_flapping`), Memory/Disk/PID pressure
 * going False→True (`node_pressure`, escalated once to critical when sustained or paired with an
 * eviction burst, D378) and evictions piling up on one node (`eviction_burst`). Creation fills state
 * and emits nothing; a flapping or burst condition clears once its window no longer holds enough
 * changes, so it may fire again later. Pure: time comes from the caller.
 */
import type { Signal } from "../signal.ts";
import type { KubeObject, ObjectChange } from "../source-spec.ts";
import { goDuration } from "../go-time.ts";
import {
  type Meta,
  type ObjectStateSettings,
  condition,
  meta,
  objectStateSignal,
  within,
} from "./object-state-common.ts";

const PRESSURES = ["MemoryPressure", "DiskPressure", "PIDPressure"] as const;

interface Pressure {
  since: number;
  escalated: boolean;
}

interface NodeState {
  meta: Meta;
  ready: string | undefined;
  readyChanges: number[];
  flapping: boolean;
  pressure: Map<string, Pressure>;
  evictions: number[];
  evictionBurst: boolean;
  seen: number;
}

export class NodeTracker {
  readonly #nodes = new Map<string, NodeState>();

  constructor(private readonly settings: ObjectStateSettings) {}

  get size(): number {
    return this.#nodes.size;
  }

  observe(change: ObjectChange, object: KubeObject, now: number): Signal[] {
    const current = meta(object);
    if (change === "delete") {
      this.#nodes.delete(current.name);
      return [];
    }
    const ready = condition(object, "Ready")?.status;
    const state = this.#nodes.get(current.name);
    if (!state) {
      this.#nodes.set(current.name, {
        meta: current,
        ready,
        readyChanges: [],
        flapping: false,
        pressure: new Map(
          PRESSURES.filter((type) => condition(object, type)?.status === "True").map((type) => [
            type,
            { since: now, escalated: false },
          ]),
        ),
        evictions: [],
        evictionBurst: false,
        seen: now,
      });
      return [];
    }
    state.meta = current;
    state.seen = now;
    return [...this.#readiness(state, object, ready, now), ...this.#pressures(state, object, now)];
  }

  #readiness(state: NodeState, object: KubeObject, ready: string | undefined, now: number): Signal[] {
    const before = state.ready;
    state.ready = ready;
    if (before === undefined || ready === undefined || before === ready) return [];
    const signals: Signal[] = [];
    if (before === "True") {
      const detail = condition(object, "Ready");
      const why = [detail?.reason, detail?.message].filter(Boolean).join(": ") || "no reason given";
      signals.push(
        this.#signal(state, "node_notready", "critical", `node Ready condition went True→${ready}: ${why}`, now),
      );
    }
    state.readyChanges = [...within(state.readyChanges, now, this.settings.flapWindowMs), now];
    if (!state.flapping && state.readyChanges.length >= this.settings.flapChanges) {
      state.flapping = true;
      signals.push(
        this.#signal(
          state,
          "node_flapping",
          "warning",
          `node Ready condition changed ${state.readyChanges.length} times within ${goDuration(this.settings.flapWindowMs)} (now ${ready})`,
          now,
        ),
      );
    }
    return signals;
  }

  #pressures(state: NodeState, object: KubeObject, now: number): Signal[] {
    const signals: Signal[] = [];
    for (const type of PRESSURES) {
      const found = condition(object, type);
      const active = state.pressure.get(type);
      if (found?.status !== "True") {
        state.pressure.delete(type);
        continue;
      }
      if (active) continue;
      state.pressure.set(type, { since: now, escalated: false });
      const why = [found.reason, found.message].filter(Boolean).join(": ");
      signals.push(
        this.#signal(state, "node_pressure", "warning", `node ${type} went False→True${why ? `: ${why}` : ""}`, now),
      );
    }
    return signals;
  }

  /** An evicted pod on `nodeName`: counts toward eviction_burst (and escalates pressure with it). */
  evicted(nodeName: string, now: number): Signal[] {
    const state = this.#nodes.get(nodeName);
    if (!state) return [];
    state.seen = now;
    state.evictions = [...within(state.evictions, now, this.settings.evictionWindowMs), now];
    if (state.evictionBurst || state.evictions.length < this.settings.evictionBurst) return [];
    state.evictionBurst = true;
    const signals = [
      this.#signal(
        state,
        "eviction_burst",
        "warning",
        `${state.evictions.length} pods evicted from node ${nodeName} within ${goDuration(this.settings.evictionWindowMs)}`,
        now,
      ),
    ];
    for (const [type, pressure] of state.pressure)
      if (!pressure.escalated) signals.push(this.#escalate(state, type, pressure, "with an eviction burst", now));
    return signals;
  }

  /** Windows, escalations and expiry. */
  tick(now: number): Signal[] {
    const signals: Signal[] = [];
    for (const [name, state] of this.#nodes) {
      if (now - state.seen > this.settings.stateTtlMs) {
        this.#nodes.delete(name);
        continue;
      }
      state.readyChanges = within(state.readyChanges, now, this.settings.flapWindowMs);
      if (state.flapping && state.readyChanges.length < this.settings.flapChanges) state.flapping = false;
      state.evictions = within(state.evictions, now, this.settings.evictionWindowMs);
      if (state.evictionBurst && state.evictions.length < this.settings.evictionBurst) state.evictionBurst = false;
      for (const [type, pressure] of state.pressure)
        if (!pressure.escalated && now - pressure.since >= this.settings.pressureEscalateMs)
          signals.push(this.#escalate(state, type, pressure, `sustained for ${goDuration(now - pressure.since)}`, now));
    }
    return signals;
  }

  #escalate(state: NodeState, type: string, pressure: Pressure, why: string, now: number): Signal {
    pressure.escalated = true;
    return this.#signal(state, "node_pressure", "critical", `node ${type} ${why}`, now);
  }

  #signal(state: NodeState, reason: string, severity: "critical" | "warning", message: string, now: number): Signal {
    return objectStateSignal({
      reason,
      object: state.meta,
      kindOfObject: "Node",
      severity,
      message,
      now,
      node: state.meta.name,
    });
  }
}
