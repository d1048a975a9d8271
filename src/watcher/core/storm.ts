/**
 * Storm correlation (docs/watcher-pipeline.md#storms): new incidents that share a blast-radius key
 * (a node, an owner, a namespace; mined keys such as the image behind --storm-mine) within
 * --storm-window form one storm once --storm-min of them agree; later incidents on an open storm's
 * key attach to it. A storm closes after 30 idle minutes. Pure; the caller passes the clock.
 */
import { type Severity, outranks } from "./signal.ts";

/** A blast-radius key: `Kind/namespace/name`, the namespace empty for cluster-scoped kinds. */
export interface Ancestor {
  kind: string;
  namespace: string;
  name: string;
  /** Where the key came from when not the topology: `mined:image`, `mined:node`, `mined:container`. */
  source?: string;
}

export function ancestorKey(ancestor: Ancestor): string {
  return `${ancestor.kind}/${ancestor.namespace}/${ancestor.name}`;
}

/** `Kind name` for cluster-scoped ancestors, `Kind ns/name` otherwise. */
export function ancestorDisplay(ancestor: Ancestor): string {
  return ancestor.namespace === ""
    ? `${ancestor.kind} ${ancestor.name}`
    : `${ancestor.kind} ${ancestor.namespace}/${ancestor.name}`;
}

export interface StormMember {
  /** The member's dedup key. */
  key: string;
  fingerprint: string;
  reason: string;
  canonicalReason: string;
  namespace: string;
  kindOfObject: string;
  name: string;
  uid: string;
  severity: Severity;
  firstSeen: number;
  lastSeen: number;
  /** The member's own session, when it opened one before the storm formed. */
  sessionId?: string;
  zone: string;
}

export interface Storm {
  id: string;
  ancestor: Ancestor;
  /** Canonical reason of the first member. */
  reason: string;
  members: StormMember[];
  sessionId?: string;
  lastActive: number;
  lastReportedCount: number;
  lastReportAt: number;
  /** Members marked resolved by their own outcome record. */
  resolved: Set<string>;
}

export type StormObservation =
  | { outcome: "none" }
  | { outcome: "attached"; storm: Storm }
  | { outcome: "formed"; storm: Storm };

export interface StormSettings {
  min: number;
  windowMs: number;
  /** Threshold of mined keys; 0 means the larger of 5 and min. */
  mineMin: number;
  idleCloseMs?: number;
}

/** Highest member severity, with warning promoted to critical at 10 members. */
export function stormSeverity(storm: Storm): Severity {
  let best: Severity = "info";
  for (const member of storm.members) if (outranks(member.severity, best)) best = member.severity;
  return best === "warning" && storm.members.length >= 10 ? "critical" : best;
}

interface Pending {
  member: StormMember;
  declared: Ancestor[];
  mined: Ancestor[];
  at: number;
}

export class StormCorrelator {
  private readonly pending = new Map<string, Pending>();
  private readonly storms = new Map<string, Storm>();

  constructor(private readonly settings: StormSettings) {}

  get active(): Storm[] {
    return [...this.storms.values()];
  }

  get(id: string): Storm | undefined {
    return this.storms.get(id);
  }

  /** The open storm a member key belongs to. */
  stormOf(memberKey: string): Storm | undefined {
    for (const storm of this.storms.values())
      if (storm.members.some((member) => member.key === memberKey)) return storm;
    return undefined;
  }

  close(id: string): void {
    this.storms.delete(id);
  }

  observe(
    member: StormMember,
    declared: readonly Ancestor[],
    mined: readonly Ancestor[],
    now: number,
  ): StormObservation {
    this.prune(now);
    for (const candidate of [...declared, ...mined]) {
      const storm = this.storms.get(ancestorKey(candidate));
      if (!storm) continue;
      if (!storm.members.some((existing) => existing.key === member.key)) storm.members.push(member);
      storm.resolved.delete(member.key);
      storm.lastActive = now;
      return { outcome: "attached", storm };
    }
    if (declared.length === 0 && mined.length === 0) return { outcome: "none" };
    this.pending.set(member.key, { member, declared: [...declared], mined: [...mined], at: now });
    const mineMin = this.settings.mineMin > 0 ? this.settings.mineMin : Math.max(5, this.settings.min);
    const tries: Array<[Ancestor, number]> = [
      ...declared.map((a): [Ancestor, number] => [a, this.settings.min]),
      ...mined.map((a): [Ancestor, number] => [a, mineMin]),
    ];
    for (const [candidate, threshold] of tries) {
      const key = ancestorKey(candidate);
      const sharing = [...this.pending.values()].filter((entry) =>
        [...entry.declared, ...entry.mined].some((other) => ancestorKey(other) === key),
      );
      if (sharing.length < threshold) continue;
      sharing.sort((a, b) => a.at - b.at);
      for (const entry of sharing) this.pending.delete(entry.member.key);
      const first = sharing[0]?.member ?? member;
      const storm: Storm = {
        id: key,
        ancestor: candidate,
        reason: first.canonicalReason,
        members: sharing.map((entry) => entry.member),
        lastActive: now,
        lastReportedCount: sharing.length,
        lastReportAt: now,
        resolved: new Set(),
      };
      this.storms.set(key, storm);
      return { outcome: "formed", storm };
    }
    return { outcome: "none" };
  }

  /** A `storm.update` is due at twice the last reported size or 10 more, at most once a minute. */
  updateDue(storm: Storm, now: number): boolean {
    const count = storm.members.length;
    const grown = count >= storm.lastReportedCount * 2 || count >= storm.lastReportedCount + 10;
    return grown && now - storm.lastReportAt >= 60_000;
  }

  private prune(now: number): void {
    for (const [key, entry] of this.pending) if (now - entry.at >= this.settings.windowMs) this.pending.delete(key);
    const idle = this.settings.idleCloseMs ?? 30 * 60_000;
    for (const [id, storm] of this.storms) if (now - storm.lastActive > idle) this.storms.delete(id);
  }
}
