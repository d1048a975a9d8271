/**
 * `capacity.scaleup_gap` (D395): a node group whose scale-up the autoscaler says is needed, in
 * progress or backed off (ScaleUp `Needed`/`NeedsScaleUp`, `InProgress`, `Backoff`) while no node
 * arrives, sustained for `gapMs` (3m). The gap counts from the ScaleUp condition's
 * lastTransitionTime (the autoscaler's own clock; the first sight when absent, never later than
 * now), so a group stuck before the watcher started is judged at the first answer; moving between
 * the wanting states keeps the gap's start, a ready count that grows restarts it (nodes are
 * arriving). A warning; critical when in Backoff with an error the status names (the YAML's
 * `backoffInfo`; the older text has none). A group that stops wanting, or leaves the status, is
 * forgotten and may page again; only groups in a gap are held. Pure.
 */
import { goDuration } from "../go-time.ts";
import type { OpenCondition } from "../open-conditions.ts";
import type { Signal } from "../signal.ts";
import { type AutoscalerStatus, type NodeGroupStatus, wantsNodes } from "./capacity-status.ts";
import { sourceSignal } from "./source-fields.ts";

interface Gap {
  since: number;
  ready: number | undefined;
  /** 0 nothing sent, 1 warning sent, 2 critical sent. */
  level: 0 | 1 | 2;
}

export class ScaleUpGaps {
  readonly #gapMs: number;
  readonly #gaps = new Map<string, Gap>();

  constructor(gapMs: number) {
    this.#gapMs = gapMs;
  }

  get size(): number {
    return this.#gaps.size;
  }

  /** Gaps that paged and still hold: gone once the group stops wanting nodes, gains one, or leaves the status (D437). */
  *open(): Iterable<OpenCondition> {
    for (const [name, gap] of this.#gaps) if (gap.level > 0) yield { uid: `nodegroup:${name}`, reason: "scaleup_gap" };
  }

  /** One answer of the status ConfigMap: the signals of the gaps it shows. */
  judge(status: AutoscalerStatus, now: number): Signal[] {
    const signals: Signal[] = [];
    const seen = new Set<string>();
    for (const group of status.groups) {
      seen.add(group.name);
      if (!wantsNodes(group)) {
        this.#gaps.delete(group.name);
        continue;
      }
      const gap = this.#track(group, now);
      if (now - gap.since < this.#gapMs) continue;
      const level = group.scaleUp === "Backoff" && group.backoffError ? 2 : 1;
      if (level <= gap.level) continue;
      gap.level = level;
      signals.push(this.#signal(group, level, now - gap.since, now));
    }
    for (const name of this.#gaps.keys()) if (!seen.has(name)) this.#gaps.delete(name);
    return signals;
  }

  #track(group: NodeGroupStatus, now: number): Gap {
    const before = this.#gaps.get(group.name);
    const progressed = before?.ready !== undefined && group.ready !== undefined && group.ready > before.ready;
    if (before && !progressed) {
      before.ready = group.ready;
      return before;
    }
    const since = progressed ? now : Math.min(group.scaleUpSince ?? now, now);
    const gap: Gap = { since, ready: group.ready, level: 0 };
    this.#gaps.set(group.name, gap);
    return gap;
  }

  #signal(group: NodeGroupStatus, level: 1 | 2, age: number, now: number): Signal {
    const counts = [
      group.ready !== undefined ? `ready=${group.ready}` : "",
      group.target !== undefined ? `cloudProviderTarget=${group.target}` : "",
    ]
      .filter((part) => part !== "")
      .join(" ");
    const why = group.backoffError ? `: ${group.backoffError}` : "";
    return sourceSignal({
      kind: "capacity.scaleup_gap",
      reason: "scaleup_gap",
      object: { uid: `nodegroup:${group.name}`, name: group.name, namespace: "" },
      kindOfObject: "NodeGroup",
      severity: level === 2 ? "critical" : "warning",
      now,
      message: `node group ${group.name}: scale-up ${group.scaleUp} for ${goDuration(age)} without a new ready node${counts ? ` (${counts})` : ""}${why}`,
    });
  }
}
