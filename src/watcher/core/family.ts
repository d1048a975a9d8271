/**
 * `family.member` (docs/watcher-pipeline.md#family-members, D422): the cross-source join. A
 * signal of another source family that collapses into the dedup key of an incident already bound
 * to a session (`objectstate.restart_burst` onto a `cluster-event` CrashLoopBackOff) is a second
 * angle on the same incident: one `family.member` follow-up per source family per dedup window
 * goes into that session, where a plain duplicate would be suppressed. Pure.
 */
import type { DedupEntry } from "./dedup-cache.ts";
import { maskText } from "./mask.ts";
import type { Signal } from "./signal.ts";

/** Where the payload's `design_ref` points: this repository's description of the join. */
export const FAMILY_DESIGN_REF = "docs/watcher-pipeline.md#family-members";

export interface FamilyMemberPayload {
  kind: "family.member";
  member_kind: string;
  reason: string;
  severity: string;
  namespace?: string;
  kind_of_object: string;
  name: string;
  uid: string;
  fingerprint: string;
  family: string;
  opened_by: string;
  cluster: string;
  session_id: string;
  message: string;
  design_ref: string;
}

/** The source family of a kind: its part before the dot (`objectstate`), or the whole kind (`cluster-event`). */
export function sourceFamily(kind: string): string {
  const dot = kind.indexOf(".");
  return dot < 0 ? kind : kind.slice(0, dot);
}

/**
 * The family a duplicate joins as, when it is a first from another source family in this window
 * (marked on the entry); undefined for the opener's own family or a family already joined.
 */
export function joinFamily(entry: DedupEntry, signal: Signal): string | undefined {
  if (!entry.sourceKind) return undefined;
  const family = sourceFamily(signal.kind);
  if (family === sourceFamily(entry.sourceKind)) return undefined;
  const joined = entry.joinedFamilies ?? [];
  if (joined.includes(family)) return undefined;
  entry.joinedFamilies = [...joined, family];
  return family;
}

export function buildFamilyMemberPayload(
  signal: Signal,
  canonicalReason: string,
  openedBy: string,
  fingerprint: string,
  cluster: string,
  sessionId: string,
): FamilyMemberPayload {
  return {
    kind: "family.member",
    member_kind: signal.kind,
    reason: signal.reason,
    severity: signal.severity,
    ...(signal.namespace ? { namespace: signal.namespace } : {}),
    kind_of_object: signal.kindOfObject,
    name: signal.name,
    uid: signal.uid,
    fingerprint,
    family: canonicalReason,
    opened_by: sourceFamily(openedBy),
    cluster,
    session_id: sessionId,
    message: maskText(
      `cross-source join: ${signal.kind} (${signal.reason}) attached to this session's ${canonicalReason} incident, opened by the ${sourceFamily(openedBy)} source — a second observation angle on the same incident; at most one family.member per source family per window`,
    ),
    design_ref: FAMILY_DESIGN_REF,
  };
}

/** Critical incidents remembered per blast-radius ancestor at most (the oldest forgotten first). */
export const ANCESTOR_INDEX_CAPACITY = 10_000;

/** Ancestor kinds a warning may share with a critical incident to join it (never a whole namespace). */
const JOINABLE_ANCESTORS = new Set(["Node", "ReplicaSet", "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"]);

export interface BoundIncident {
  /** The critical incident's dedup key and the session it opened. */
  key: string;
  sessionId: string;
}

/**
 * The blast-radius join (D422): which open critical incident owns each ancestor key (`Node//n1`,
 * `ReplicaSet/shop/web-7b9d`), so a warning under the same ancestor joins that incident's session
 * instead of the watchboard; at most one member per source family per incident.
 */
export class AncestorIndex {
  private readonly owners = new Map<string, BoundIncident>();
  private readonly joined = new Map<string, Set<string>>();

  constructor(private readonly capacity = ANCESTOR_INDEX_CAPACITY) {}

  /** A critical incident opened: it owns its joinable ancestors. */
  note(incident: BoundIncident, ancestorKeys: readonly string[]): void {
    for (const ancestor of ancestorKeys) {
      if (!JOINABLE_ANCESTORS.has(ancestor.slice(0, ancestor.indexOf("/")))) continue;
      this.owners.delete(ancestor);
      this.owners.set(ancestor, incident);
    }
    while (this.owners.size > this.capacity) this.owners.delete(this.owners.keys().next().value as string);
    this.joined.delete(incident.key);
  }

  /**
   * The incident a warning with these ancestors joins, and the ancestor it matched, when `live`
   * says that incident is still bound to its session and the family has not joined it yet.
   */
  match(
    ancestorKeys: readonly string[],
    family: string,
    live: (incident: BoundIncident) => boolean,
  ): { incident: BoundIncident; ancestor: string } | undefined {
    for (const ancestor of ancestorKeys) {
      const incident = this.owners.get(ancestor);
      if (!incident) continue;
      if (!live(incident)) {
        this.owners.delete(ancestor);
        continue;
      }
      const families = this.joined.get(incident.key) ?? new Set<string>();
      if (families.has(family)) continue;
      families.add(family);
      this.joined.set(incident.key, families);
      return { incident, ancestor };
    }
    return undefined;
  }
}

export function buildReattachedPayload(
  signal: Signal,
  count: number,
  ancestor: string,
  fingerprint: string,
  cluster: string,
  sessionId: string,
): FamilyMemberPayload {
  const family = sourceFamily(signal.kind);
  return {
    kind: "family.member",
    member_kind: signal.kind,
    reason: signal.reason,
    severity: signal.severity,
    ...(signal.namespace ? { namespace: signal.namespace } : {}),
    kind_of_object: signal.kindOfObject,
    name: signal.name,
    uid: signal.uid,
    fingerprint,
    family: ancestor,
    opened_by: family,
    cluster,
    session_id: sessionId,
    message: `blast-radius join: ${signal.kind} (${signal.reason}, severity=${signal.severity}, count=${count}) shares the ancestor ${ancestor} with this session's incident — the same failure seen from a different altitude, reattached here instead of opening a watchboard digest entry; at most one per source family per incident per window`,
    design_ref: FAMILY_DESIGN_REF,
  };
}
