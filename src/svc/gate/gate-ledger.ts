/**
 * The write gate's durable state, folded from a session's rows alone (docs/svc.md#session-states:
 * the session reads `paused` from the log): each parked call (`gate-interrupt`), the verdict that resolved it (a
 * `gate-audit` row whose outcome resolves), the intent committed before its call ran
 * (`gate-intent`) and the call's effect (`gate-effect`). A call with an intent and no effect was
 * cut while it ran, or between its return and its row: it is never run again, and until an
 * operator acknowledges it the session refuses new mutating calls (`ambiguous_prior_effect`).
 * Pure: rows in, ledger out; the gate appends rows and folds each one it commits.
 */
import type { TraceCarrier } from "../../core/session-store.ts";
import { validTraceCarrier } from "../../core/trace-carrier.ts";
import type { AuditEvent, CommittedRow } from "../../core/events.ts";
import type { ChangeSet, ChangeSetQuestion } from "./change-set.ts";
import type { Snapshot } from "./precondition.ts";

export const INTERRUPT_ROW = "gate-interrupt";
export const AUDIT_ROW = "gate-audit";
export const INTENT_ROW = "gate-intent";
export const EFFECT_ROW = "gate-effect";
export const ACK_ROW = "gate-ack-effects";
export const CHANGE_SET_ROW = "gate-change-set";
export const GRANT_ROW = "gate-grant";
export const GRANT_VOID_ROW = "gate-grant-void";
export const GATE_AUTHOR = "svc/gate";

/** The audit outcomes this build writes (docs/svc.md#the-audit-trail). */
export type AuditOutcome =
  | "awaiting_approval"
  | "denied_by_policy"
  | "denied_by_operator"
  | "approval_scope_refused"
  | "malformed_verdict"
  | "edit_unattributed"
  | "edit_refused"
  | "edit_applied"
  | "apply"
  | "dry_run"
  | "change_set_scope_refused"
  | "change_set_approved"
  | "approved_by_change_set"
  | "change_set_refused";

/** Outcomes that answer a parked call for good: it runs (apply, edit_applied) or never does. */
const RESOLVING: ReadonlySet<string> = new Set([
  "apply",
  "edit_applied",
  "denied_by_operator",
  "edit_unattributed",
  "edit_refused",
  "denied_by_policy",
  "approved_by_change_set",
]);

/** A mutating call the gate parked, as its `gate-interrupt` row recorded it. */
export interface ParkedCall {
  interruptId: string;
  callId: string;
  /** The model-facing tool name the call ran under. */
  tool: string;
  args: Record<string, unknown>;
  key: string;
  agent: string;
  message: string;
  parkedAt: string;
  /** The change set this call belongs to, as the question showed it. */
  changeSet?: ChangeSetQuestion;
  /** Set when a change-set grant authorized the call (it was never a question). */
  grantId?: string;
  /** The park span's trace context (tracing on): the verdict's span links to it (D302). */
  trace?: TraceCarrier;
}

/** A change-set grant: one exact call, once, until it expires, while its precondition holds. */
export interface Grant {
  grantId: string;
  /** `tool(<args JSON, keys sorted>)` with the tool's own name. */
  signature: string;
  approvedAt: string;
  expiresAt: string;
  /** The precondition as read at approval (absent: none declared). */
  snapshot?: Snapshot;
  /** The call whose answer minted it. */
  source: string;
  approver?: string;
  note?: string;
  spent: boolean;
  voided?: string;
}

/** The verdict that resolved a parked call. */
export interface Resolution {
  outcome: AuditOutcome;
  /** The arguments the call runs with (approve: as proposed; edit: the operator's); absent: it never runs. */
  runArgs?: Record<string, unknown>;
  approver?: string;
  note?: string;
  detail?: string;
  decidedAt: string;
}

export interface GateEntry {
  call: ParkedCall;
  resolution?: Resolution;
  /** The intent row's seq: the call was about to run. */
  intentSeq?: number;
  effect?: { output: Record<string, unknown>; isError: boolean };
}

export class GateLedger {
  readonly #entries = new Map<string, GateEntry>();
  readonly #grants = new Map<string, Grant>();
  /** The change set this session's specialist proposed last. */
  #changeSet: ChangeSet | undefined;
  /** Intents up to this seq are acknowledged by an operator (`ack-effects`). */
  #ackedThrough = 0;
  /** An outcome was told (an effect row) after the agent's last model response. */
  #behind = false;

  static fold(rows: readonly CommittedRow[]): GateLedger {
    const ledger = new GateLedger();
    for (const row of rows) ledger.apply(row);
    return ledger;
  }

  /** Fold one committed row (rows that are not the gate's change nothing). */
  apply(committed: CommittedRow): void {
    const row = committed.event;
    if (row.kind === "model-response") this.#behind = false;
    if (row.kind !== "audit") return;
    const meta = row.metadata;
    const id = typeof meta.interrupt_id === "string" ? meta.interrupt_id : undefined;
    if (row.name === ACK_ROW) {
      this.#ackedThrough = committed.seq;
      return;
    }
    if (row.name === CHANGE_SET_ROW) {
      this.#changeSet = { specialist: text(meta.specialist), changes: meta.changes as ChangeSet["changes"] };
      return;
    }
    if (row.name === GRANT_ROW || row.name === GRANT_VOID_ROW) {
      this.#applyGrant(row);
      return;
    }
    if (id === undefined) return;
    if (row.name === INTERRUPT_ROW) {
      const call = parkedCall(row, id);
      this.#entries.set(id, { call });
      const grant = call.grantId === undefined ? undefined : this.#grants.get(call.grantId);
      if (grant) grant.spent = true;
    }
    const entry = this.#entries.get(id);
    if (entry === undefined) return;
    if (row.name === AUDIT_ROW && entry.resolution === undefined && RESOLVING.has(String(meta.outcome)))
      entry.resolution = resolution(row);
    if (row.name === INTENT_ROW) entry.intentSeq = committed.seq;
    if (row.name === EFFECT_ROW) {
      entry.effect = { output: (meta.output ?? {}) as Record<string, unknown>, isError: meta.is_error === true };
      this.#behind = true;
    }
  }

  #applyGrant(row: AuditEvent): void {
    const meta = row.metadata;
    const grantId = text(meta.grant_id);
    if (row.name === GRANT_VOID_ROW) {
      const grant = this.#grants.get(grantId);
      if (grant) grant.voided = text(meta.reason);
      return;
    }
    const grant: Grant = {
      grantId,
      signature: text(meta.signature),
      approvedAt: text(meta.approved_at),
      expiresAt: text(meta.expires_at),
      source: text(meta.source),
      spent: false,
    };
    if (meta.snapshot !== undefined) grant.snapshot = meta.snapshot as Snapshot;
    if (typeof meta.approver === "string") grant.approver = meta.approver;
    if (typeof meta.note === "string") grant.note = meta.note;
    this.#grants.set(grantId, grant);
  }

  /** The grants minted for this exact call, oldest first (spent and voided ones included). */
  grantsFor(signature: string): Grant[] {
    return [...this.#grants.values()].filter((grant) => grant.signature === signature);
  }

  /** The change set this session's specialist proposed last. */
  get changeSet(): ChangeSet | undefined {
    return this.#changeSet;
  }

  /** The agent has not answered since an outcome was told to it: its next turn must ask the model. */
  get behind(): boolean {
    return this.#behind;
  }

  /** A model turn is starting: it reads every outcome told so far. */
  markTold(): void {
    this.#behind = false;
  }

  entry(interruptId: string): GateEntry | undefined {
    return this.#entries.get(interruptId);
  }

  /** Parked calls nobody has answered yet, oldest first. */
  pending(): GateEntry[] {
    return [...this.#entries.values()].filter((entry) => entry.resolution === undefined);
  }

  /** Answered calls whose answer has not been carried out (run, or told to the model) yet. */
  unsettled(): GateEntry[] {
    return [...this.#entries.values()].filter(
      (entry) => entry.resolution !== undefined && entry.intentSeq === undefined && entry.effect === undefined,
    );
  }

  /** Calls cut after their intent and before their effect, not acknowledged: never run again. */
  ambiguous(): GateEntry[] {
    return [...this.#entries.values()].filter(
      (entry) => entry.intentSeq !== undefined && entry.effect === undefined && entry.intentSeq > this.#ackedThrough,
    );
  }

  /** The session's gate state: `paused` while a question waits, `ambiguous` while an effect is unknown. */
  state(): "paused" | "ambiguous" | "clear" {
    if (this.pending().length > 0) return "paused";
    if (this.ambiguous().length > 0) return "ambiguous";
    return "clear";
  }
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function parkedCall(row: AuditEvent, interruptId: string): ParkedCall {
  const meta = row.metadata;
  return {
    interruptId,
    callId: text(meta.call_id),
    tool: text(meta.tool),
    args: record(meta.args),
    key: text(meta.key),
    agent: text(meta.agent),
    message: text(meta.message),
    parkedAt: row.ts,
    ...(meta.change_set === undefined ? {} : { changeSet: meta.change_set as ChangeSetQuestion }),
    ...(typeof meta.grant_id === "string" ? { grantId: meta.grant_id } : {}),
    ...traceField(validTraceCarrier(meta.trace)),
  };
}

function traceField(trace: TraceCarrier | undefined): { trace?: TraceCarrier } {
  return trace === undefined ? {} : { trace };
}

function resolution(row: AuditEvent): Resolution {
  const meta = row.metadata;
  const resolved: Resolution = { outcome: meta.outcome as AuditOutcome, decidedAt: row.ts };
  if (meta.outcome === "apply" || meta.outcome === "edit_applied" || meta.outcome === "approved_by_change_set")
    resolved.runArgs = record(meta.run_args);
  if (typeof meta.approver === "string") resolved.approver = meta.approver;
  if (typeof meta.note === "string") resolved.note = meta.note;
  if (typeof meta.detail === "string") resolved.detail = meta.detail;
  return resolved;
}
