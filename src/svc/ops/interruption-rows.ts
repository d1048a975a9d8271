/**
 * The interruption marker of an svc session (docs/svc.md#session-states, `running` to `interrupted`
 * on SIGTERM or `svc stop`; docs/svc-drain.md#the-drain-sigterm-or-svc-stop): audit rows on the
 * incident's coordinator session (app `svc`), never part of the conversation the model reads.
 * `svc-interrupted` sets the marker (written before the drain waits), `svc-interrupted-cleared`
 * clears it (the turn finished inside the drain window, the session was found paused at an
 * approval, or boot auto-resume settled it), `svc-autoresume-attempt` counts an auto-resume turn
 * (written before the turn: the loop breaker). Builds the rows and folds a session's rows into its
 * interruption. Pure.
 */
import type { AuditEvent, CommittedRow, EventHeader } from "../../core/events.ts";

export const INTERRUPTED_ROW = "svc-interrupted";
export const INTERRUPTED_CLEARED_ROW = "svc-interrupted-cleared";
export const AUTORESUME_ATTEMPT_ROW = "svc-autoresume-attempt";
/** The author of the drain's and auto-resume's rows. */
export const OPS_AUTHOR = "svc/ops";
/** The invocation id the rows carry (they belong to no turn). */
export const OPS_INVOCATION = "svc-ops";
/** Marks the prompt of an auto-resume turn (so a later turn of anyone else is told apart). */
export const AUTORESUME_PROMPT =
  "[auto-resume] The daemon stopped while your previous turn was running. Continue from where you stopped; do not repeat steps that already completed.";

/** Why a session was marked: the SIGTERM path, or `svc stop` (`operator stop[: reason]`). */
export interface InterruptionCause {
  /** `shutdown (SIGTERM)` or `operator stop[: reason]`. */
  reason: string;
  /** `svc stop --pause-sessions`: the session is handed to the operator, never auto-resumed. */
  pauseRequested: boolean;
}

export function interruptedRow(header: EventHeader, cause: InterruptionCause): AuditEvent {
  return {
    ...header,
    kind: "audit",
    name: INTERRUPTED_ROW,
    metadata: { reason: cause.reason, at: header.ts, pause_requested: cause.pauseRequested },
  };
}

export function clearedRow(header: EventHeader, why: string): AuditEvent {
  return { ...header, kind: "audit", name: INTERRUPTED_CLEARED_ROW, metadata: { why, at: header.ts } };
}

export function attemptRow(header: EventHeader, attempt: number, boot: string): AuditEvent {
  return { ...header, kind: "audit", name: AUTORESUME_ATTEMPT_ROW, metadata: { attempt, boot, at: header.ts } };
}

/** A session's interruption marker as its rows say. */
export interface Interruption {
  /** The seq and event id of the `svc-interrupted` row. */
  seq: number;
  id: string;
  /** RFC 3339 time the marker was written. */
  at: string;
  reason: string;
  pauseRequested: boolean;
  /** Seq of a prompt after the marker that is not auto-resume's: another turn took the session on. */
  supersededAt?: number;
}

/** The marker still set (none cleared it), and the auto-resume attempts' times, oldest first. */
export interface InterruptionState {
  marker: Interruption | undefined;
  attempts: string[];
}

/** Fold a coordinator session's rows (ascending) into its interruption state. */
export function interruptionState(rows: readonly CommittedRow[]): InterruptionState {
  let marker: Interruption | undefined;
  const attempts: string[] = [];
  for (const { seq, event } of rows) {
    if (event.kind === "user-message") {
      if (marker && marker.supersededAt === undefined && !event.text.includes("[auto-resume]"))
        marker.supersededAt = seq;
      continue;
    }
    if (event.kind !== "audit") continue;
    if (event.name === INTERRUPTED_ROW) marker = markerOf(seq, event);
    else if (event.name === INTERRUPTED_CLEARED_ROW) marker = undefined;
    else if (event.name === AUTORESUME_ATTEMPT_ROW) attempts.push(event.ts);
  }
  return { marker, attempts };
}

/** The session reports `interrupted`: a marker no clear row and no later turn of anyone else ended. */
export function isInterrupted(state: InterruptionState): boolean {
  return state.marker !== undefined && state.marker.supersededAt === undefined;
}

function markerOf(seq: number, event: AuditEvent): Interruption {
  const metadata = event.metadata;
  return {
    seq,
    id: event.id,
    at: typeof metadata.at === "string" ? metadata.at : event.ts,
    reason: typeof metadata.reason === "string" ? metadata.reason : "",
    pauseRequested: metadata.pause_requested === true,
  };
}
