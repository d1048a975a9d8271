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
