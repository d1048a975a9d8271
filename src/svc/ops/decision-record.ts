/**
 * The decision export's records (docs/svc-cli.md, its `export-decisions` section), schema
 * `svc.decision/v1`: one record per adjudicated mutating call, read from the write gate's
 * `gate-audit` rows (D242): an operator's verdict (approve, reject, edit; a refused scope too) and
 * a change-set grant being spent. Policy denials before a question, `apply` and `dry_run`
 * adjudicate nothing and make no record. Approvers are digested (`sha256:` + 16 hex) unless raw
 * identities are asked for; machine identities (`svc:...`, `mast:...`) never are. Field order is
 * that page's record table. Pure.
 */
import { createHash } from "node:crypto";
import type { AuditEvent } from "../../core/events.ts";
import { AUDIT_ROW, type AuditOutcome, INTERRUPT_ROW } from "../gate/gate-ledger.ts";
import { disposition } from "../gate/gate-rows.ts";
import { type Incident, incidentSessions, incidentWorkload } from "./incident.ts";

export const DECISION_SCHEMA = "svc.decision/v1";

export const EXPORT_WARNING =
  "Tool arguments are exported verbatim, including any secrets or cluster topology they carry. Treat this file with the same care as the cluster it describes.";

export interface DecisionRecord {
  decided_at: string;
  session: string;
  workload?: string;
  specialist?: string;
  invocation?: string;
  function_call_id?: string;
  interrupt_id?: string;
  tool: string;
  outcome?: Verdict;
  scope?: string;
  authority: "operator_verdict" | "change_set_grant";
  disposition: "authorized" | "refused_by_operator" | "refused_by_mast";
  refusal?: string;
  change_set?: string;
  proposed_key: string;
  proposed_args?: Record<string, unknown>;
  executed_key?: string;
  executed_args?: Record<string, unknown>;
  approver?: string;
  note?: string;
}

export interface DecisionMeta {
  tool: string;
  version: string;
  schema: typeof DECISION_SCHEMA;
  exported_at: string;
  redaction: "approver_digest" | "none";
  source?: string;
  session?: string;
  workload?: string;
  since?: string;
  until?: string;
  records: number;
  warning: string;
}

/** Refusals of a verdict's scope: recorded against the question, which stays open (D238). */
const SCOPE_REFUSALS: ReadonlySet<string> = new Set(["approval_scope_refused", "change_set_scope_refused"]);
const VERDICTS: ReadonlySet<string> = new Set(["approve", "reject", "edit"]);
type Verdict = "approve" | "reject" | "edit";

/** Identities that name a mechanism, never a person: passed through in clear. */
export function isMachineIdentity(identity: string): boolean {
  return identity.startsWith("svc:") || identity.startsWith("mast:");
}

/** `sha256:` plus the first 16 hex characters of the identity's SHA-256, machine identities as they are. */
export function digestApprover(identity: string): string {
  if (isMachineIdentity(identity)) return identity;
  return `sha256:${createHash("sha256").update(identity).digest("hex").slice(0, 16)}`;
}

/** Every decision of the incident, oldest first, approvers as given (digest them with `redactDecision`). */
export function incidentDecisions(incident: Incident): DecisionRecord[] {
  const workload = incidentWorkload(incident);
  const decisions: DecisionRecord[] = [];
  for (const session of incidentSessions(incident)) {
    const parkedIn = new Map<string, string>();
    for (const { event } of session.rows) {
      if (event.kind !== "audit") continue;
      if (event.name === INTERRUPT_ROW && typeof event.metadata.interrupt_id === "string")
        parkedIn.set(event.metadata.interrupt_id, event.invocationId);
      if (event.name !== AUDIT_ROW) continue;
      const decision = decisionOf(event, incident.id, workload, parkedIn);
      if (decision !== undefined) decisions.push(decision);
    }
  }
  return decisions.sort((a, b) => Date.parse(a.decided_at) - Date.parse(b.decided_at));
}

/** The decision a `gate-audit` row records, if it records one. */
function decisionOf(
  row: AuditEvent,
  session: string,
  workload: string,
  parkedIn: ReadonlyMap<string, string>,
): DecisionRecord | undefined {
  const meta = row.metadata;
  const outcome = String(meta.outcome ?? "") as AuditOutcome;
  const authority = meta.authority;
  const refusedScope = SCOPE_REFUSALS.has(outcome);
  if (authority !== "operator_verdict" && authority !== "change_set_grant" && !refusedScope) return undefined;
  const key = text(meta.key) ?? "";
  const interruptId = text(meta.interrupt_id);
  const grant = authority === "change_set_grant";
  const verdict = grant ? "approve" : text(meta.verdict);
  const done = disposition(outcome);
  const edited = verdict === "edit" && outcome === "edit_applied";
  const record: DecisionRecord = {
    decided_at: new Date(row.ts).toISOString(),
    session,
    ...optional("workload", workload === "" ? undefined : workload),
    ...optional("specialist", text(meta.agent)),
    ...optional("invocation", grant ? row.invocationId : parkedIn.get(interruptId ?? "")),
    ...optional("function_call_id", text(meta.call_id)),
    ...optional("interrupt_id", interruptId),
    tool: ownName(key, text(meta.tool) ?? ""),
    ...optional("outcome", verdict !== undefined && VERDICTS.has(verdict) ? (verdict as Verdict) : undefined),
    ...optional("scope", text(meta.scope)),
    authority: grant ? "change_set_grant" : "operator_verdict",
    disposition: done,
    ...optional("refusal", done === "authorized" ? undefined : outcome),
    ...optional("change_set", grant ? text(meta.change_set) : undefined),
    proposed_key: key,
    ...optional("proposed_args", object(meta.args) ?? (grant ? object(meta.run_args) : undefined)),
    ...optional("executed_key", edited ? text(meta.executed_key) : undefined),
    ...optional("executed_args", edited ? object(meta.run_args) : undefined),
    ...optional("approver", text(meta.approver)),
    ...optional("note", text(meta.note)),
  };
  return record;
}

/** The record as exported: the approver digested unless raw identities were asked for. */
export function redactDecision(record: DecisionRecord, includeApprover: boolean): DecisionRecord {
  if (includeApprover || record.approver === undefined) return record;
  return { ...record, approver: digestApprover(record.approver) };
}

/** One JSON Lines line, with `<`, `>` and `&` escaped (`\u003c`, docs/wire-compat.md#svcs-inherited-names). */
export function jsonLine(value: unknown): string {
  return `${JSON.stringify(value).replace(/[<>&]/g, (char) => `\\u00${char.charCodeAt(0).toString(16)}`)}\n`;
}

/** The operator's call key names the tool by its own name (D243): `apply_change(replicas=10)` -> `apply_change`. */
function ownName(key: string, fallback: string): string {
  const open = key.indexOf("(");
  return open > 0 ? key.slice(0, open) : fallback;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function object(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function optional<K extends string, V>(name: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [name]: value }) as { [P in K]?: V };
}
