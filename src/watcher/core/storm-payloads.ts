/**
 * Storm payloads, schema v1 (docs/watcher-pipeline.md#payloads): `storm` (one session for the whole
 * storm), `storm.member` and `storm.member_superseded` (routing notes) and `storm.update`. Pure.
 */
import { type Sha256Hex, fingerprint } from "./fingerprint.ts";
import { rfc3339 } from "./go-time.ts";
import type { PayloadContext } from "./payload.ts";
import type { Severity } from "./signal.ts";
import { type Storm, type StormMember, ancestorDisplay, stormSeverity } from "./storm.ts";

export interface StormIncidentRef {
  fingerprint: string;
  reason: string;
  namespace?: string;
  kind_of_object: string;
  name: string;
  uid: string;
  session_id?: string;
}

export interface StormPayload {
  kind: "storm";
  fingerprint: string;
  severity: Severity;
  cluster: string;
  ancestor_kind: string;
  ancestor_namespace?: string;
  ancestor_name: string;
  reason: string;
  message: string;
  affected_count: number;
  namespaces_count: number;
  first_seen: string;
  last_seen: string;
  representative_incidents: StormIncidentRef[];
  member_fingerprints: string[];
  context: PayloadContext;
  enrichment?: { bundle: string };
  key_source?: string;
}

export interface StormMemberPayload {
  kind: "storm.member" | "storm.member_superseded";
  storm_fingerprint: string;
  storm_session_id?: string;
  ancestor_kind: string;
  ancestor_namespace?: string;
  ancestor_name: string;
  cluster: string;
  message: string;
  incident: StormIncidentRef;
}

export function incidentRef(member: StormMember): StormIncidentRef {
  return {
    fingerprint: member.fingerprint,
    reason: member.reason,
    ...(member.namespace ? { namespace: member.namespace } : {}),
    kind_of_object: member.kindOfObject,
    name: member.name,
    uid: member.uid,
    ...(member.sessionId ? { session_id: member.sessionId } : {}),
  };
}

export function stormFingerprint(storm: Storm, sha256Hex: Sha256Hex): string {
  return fingerprint(sha256Hex, "storm", storm.reason, storm.ancestor.kind, storm.members[0]?.zone ?? "");
}

function namespacesCount(storm: Storm): number {
  return new Set(storm.members.map((member) => member.namespace)).size;
}

export function buildStormPayload(storm: Storm, cluster: string, sha256Hex: Sha256Hex, bundle?: string): StormPayload {
  const representatives = storm.members.slice(0, 3).map(incidentRef);
  const display = ancestorDisplay(storm.ancestor);
  const count = storm.members.length;
  const namespaces = namespacesCount(storm);
  return {
    kind: "storm",
    fingerprint: stormFingerprint(storm, sha256Hex),
    severity: stormSeverity(storm),
    cluster,
    ancestor_kind: storm.ancestor.kind,
    ...(storm.ancestor.namespace ? { ancestor_namespace: storm.ancestor.namespace } : {}),
    ancestor_name: storm.ancestor.name,
    reason: storm.reason,
    message: `${display}: ${count} incidents across ${namespaces} namespace(s) share this blast-radius key; ${representatives.length} representative incident(s) attached; member sessions are suppressed and route here`,
    affected_count: count,
    namespaces_count: namespaces,
    first_seen: rfc3339(Math.min(...storm.members.map((member) => member.firstSeen))),
    last_seen: rfc3339(Math.max(...storm.members.map((member) => member.lastSeen))),
    representative_incidents: representatives,
    member_fingerprints: storm.members.map((member) => member.fingerprint),
    context: storm.ancestor.kind === "Node" ? { node: storm.ancestor.name } : {},
    ...(bundle ? { enrichment: { bundle } } : {}),
    ...(storm.ancestor.source ? { key_source: storm.ancestor.source } : {}),
  };
}

export function buildStormMemberPayload(
  kind: StormMemberPayload["kind"],
  storm: Storm,
  member: StormMember,
  cluster: string,
  sha256Hex: Sha256Hex,
): StormMemberPayload {
  const display = ancestorDisplay(storm.ancestor);
  const count = storm.members.length;
  return {
    kind,
    storm_fingerprint: stormFingerprint(storm, sha256Hex),
    ...(storm.sessionId ? { storm_session_id: storm.sessionId } : {}),
    ancestor_kind: storm.ancestor.kind,
    ...(storm.ancestor.namespace ? { ancestor_namespace: storm.ancestor.namespace } : {}),
    ancestor_name: storm.ancestor.name,
    cluster,
    message:
      kind === "storm.member_superseded"
        ? `this incident was folded into the ${display} storm (${count} incidents); further followups and the outcome record route to the storm session`
        : `late-arriving incident attached to the ${display} storm (now ${count} incidents)`,
    incident: incidentRef(member),
  };
}

export function buildStormUpdatePayload(storm: Storm, cluster: string, sha256Hex: Sha256Hex) {
  const count = storm.members.length;
  const namespaces = namespacesCount(storm);
  const delta = count - storm.lastReportedCount;
  return {
    kind: "storm.update" as const,
    storm_fingerprint: stormFingerprint(storm, sha256Hex),
    ancestor_kind: storm.ancestor.kind,
    ...(storm.ancestor.namespace ? { ancestor_namespace: storm.ancestor.namespace } : {}),
    ancestor_name: storm.ancestor.name,
    cluster,
    message: `${ancestorDisplay(storm.ancestor)} storm grew to ${count} incidents across ${namespaces} namespace(s) (+${delta} since the last size report); the initial kind=storm payload carries formation-time counts`,
    affected_count: count,
    namespaces_count: namespaces,
    new_members_since_last: delta,
  };
}
