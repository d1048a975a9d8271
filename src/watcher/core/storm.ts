/**
 * Storm correlation (docs/watcher-pipeline.md#storms): new incidents that share a blast-radius key
 * within --storm-window form one storm once --storm-min of them agree; later incidents on an open
 * storm's key attach to it. Keys in priority order: external (the registry host of a retryable
 * pull, D429), topology (a node, an owner, a namespace), mined (image, node, container behind
 * --storm-mine), and last the cluster fallback for lone node failures (D430), which has its own
 * threshold, a 20 s window and a 5 minute idle close. A storm closes after 30 idle minutes. Pure;
 * the caller passes the clock.
 */
import { type Severity, outranks } from "./signal.ts";

/** A blast-radius key: `Kind/namespace/name`, the namespace empty for cluster-scoped kinds. */
export interface Ancestor {
  kind: string;
  namespace: string;
  name: string;
  /**
   * Where the key came from when not the topology: `registry-host`, `mined:image`, `mined:node`,
   * `mined:container`, `simultaneity`.
   */
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
  /** Idle time after which the storm closes, when not the default 30 minutes (the cluster fallback's 5). */
  idleCloseMs?: number;
}

/** The cluster fallback key (D430): its own threshold, window and idle close. */
export interface FallbackKey {
  ancestor: Ancestor;
  threshold: number;
  windowMs: number;
  idleCloseMs: number;
}

/** The keys tried before the topology (external) and after the mined ones (the fallback). */
export interface OuterKeys {
  external?: readonly Ancestor[];
  fallback?: FallbackKey;
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
  keys: Set<string>;
  at: number;
}

interface Try {
  ancestor: Ancestor;
  threshold: number;
  windowMs: number;
  idleCloseMs?: number;
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
    outer: OuterKeys = {},
  ): StormObservation {
    this.prune(now);
    const tries = this.tries(declared, mined, outer);
    for (const { ancestor } of tries) {
      const storm = this.storms.get(ancestorKey(ancestor));
      if (!storm) continue;
      if (!storm.members.some((existing) => existing.key === member.key)) storm.members.push(member);
      storm.resolved.delete(member.key);
      storm.lastActive = now;
      return { outcome: "attached", storm };
    }
    if (tries.length === 0) return { outcome: "none" };
    const keys = new Set(tries.map((entry) => ancestorKey(entry.ancestor)));
    this.pending.set(member.key, { member, keys, at: now });
    for (const { ancestor, threshold, windowMs, idleCloseMs } of tries) {
      const key = ancestorKey(ancestor);
      const sharing = [...this.pending.values()].filter((entry) => entry.keys.has(key) && now - entry.at < windowMs);
      if (sharing.length < threshold) continue;
      sharing.sort((a, b) => a.at - b.at);
      for (const entry of sharing) this.pending.delete(entry.member.key);
      const first = sharing[0]?.member ?? member;
      const storm: Storm = {
        id: key,
        ancestor,
        reason: first.canonicalReason,
        members: sharing.map((entry) => entry.member),
        lastActive: now,
        lastReportedCount: sharing.length,
        lastReportAt: now,
        resolved: new Set(),
        ...(idleCloseMs !== undefined ? { idleCloseMs } : {}),
      };
      this.storms.set(key, storm);
      return { outcome: "formed", storm };
    }
    return { outcome: "none" };
  }

  /** Every candidate key in priority order with the threshold and window it forms under. */
  private tries(declared: readonly Ancestor[], mined: readonly Ancestor[], outer: OuterKeys): Try[] {
    const { min, windowMs } = this.settings;
    const mineMin = this.settings.mineMin > 0 ? this.settings.mineMin : Math.max(5, min);
    const tries: Try[] = [
      ...(outer.external ?? []).map((ancestor) => ({ ancestor, threshold: min, windowMs })),
      ...declared.map((ancestor) => ({ ancestor, threshold: min, windowMs })),
      ...mined.map((ancestor) => ({ ancestor, threshold: mineMin, windowMs })),
    ];
    const fallback = outer.fallback;
    if (fallback)
      tries.push({
        ancestor: fallback.ancestor,
        threshold: fallback.threshold,
        windowMs: Math.min(windowMs, fallback.windowMs),
        idleCloseMs: fallback.idleCloseMs,
      });
    return tries;
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
    for (const [id, storm] of this.storms)
      if (now - storm.lastActive > (storm.idleCloseMs ?? idle)) this.storms.delete(id);
  }
}
