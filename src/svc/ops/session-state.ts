/**
 * The state an operator reads for an incident (docs/svc.md#session-states; `sessions list
 * --state`): `aborted`, `paused`, `interrupted` or `idle`, derived from the store's rows and
 * session records alone. STATE_READERS is an ordered list of small readers, each answering one
 * state (with the note the PENDING column shows) or nothing; the first that answers wins, so the
 * order is the precedence of docs/svc-cli.md#incidents-and-their-state (aborted > paused >
 * interrupted > idle). A new kind of pause or marker is one more reader in the list. Pure.
 */
import { GateLedger } from "../gate/gate-ledger.ts";
import { ResultLedger } from "../dispatch/result-approval.ts";
import { foldPauses } from "../pause/pause-ledger.ts";
import { type Incident, incidentSessions } from "./incident.ts";
import { interruptionState, isInterrupted } from "./interruption-rows.ts";

export const OPERATOR_STATES = ["paused", "aborted", "interrupted", "idle"] as const;
export type OperatorState = (typeof OPERATOR_STATES)[number];

/** What a reader found: the state, and a note for the PENDING column (`aborted: <reason>`). */
export interface StateMark {
  state: OperatorState;
  note?: string;
}

/** Reads one state from an incident's rows and records; undefined when it does not apply. */
export type StateReader = (incident: Incident) => StateMark | undefined;

/** Aborted (terminal): the abort marker on a session record of the incident (D246). */
export const abortedReader: StateReader = (incident) => {
  const abort = incidentSessions(incident).find((session) => session.record.abort !== undefined)?.record.abort;
  return abort === undefined ? undefined : { state: "aborted", note: `aborted: ${abort.reason}` };
};

/** Paused: a write-gate question or a result question nobody has answered, in any session of the incident. */
export const questionReader: StateReader = (incident) => {
  if (ResultLedger.fold(incident.coordinator.rows).pending().length > 0) return { state: "paused" };
  for (const session of incidentSessions(incident))
    if (GateLedger.fold(session.rows).pending().length > 0) return { state: "paused" };
  return undefined;
};

/** Paused by an operator (or `svc stop --pause-sessions`): a gate pause no token has resumed (D264). */
export const gatePauseReader: StateReader = (incident) => {
  const pause = foldPauses(incident.coordinator.rows.map((row) => row.event)).active;
  if (pause === undefined) return undefined;
  const message = pause.message === undefined ? "" : `, ${pause.message}`;
  return { state: "paused", note: `gate pause: ${pause.reason}${message}, token expires ${pause.expiresAt}` };
};

/** Interrupted: a drain's marker no finished turn cleared and no later prompt superseded (D268). */
export const interruptedReader: StateReader = (incident) => {
  const interruption = interruptionState(incident.coordinator.rows);
  if (!isInterrupted(interruption)) return undefined;
  return { state: "interrupted", note: `interrupted: ${interruption.marker?.reason ?? ""}` };
};

/** In precedence order: the first reader that answers names the state. */
export const STATE_READERS: readonly StateReader[] = [
  abortedReader,
  gatePauseReader,
  questionReader,
  interruptedReader,
];

export interface IncidentState {
  state: OperatorState;
  /** The notes of every reader that answered, in precedence order (the PENDING column shows them). */
  notes: string[];
}

/** The incident's state: the first reader's answer, else `idle`. */
export function incidentState(incident: Incident, readers: readonly StateReader[] = STATE_READERS): IncidentState {
  const marks = readers.map((reader) => reader(incident)).filter((mark) => mark !== undefined);
  return {
    state: marks[0]?.state ?? "idle",
    notes: marks.flatMap((mark) => (mark.note === undefined ? [] : [mark.note])),
  };
}
