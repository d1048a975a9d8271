/**
 * The gate pauses of svc's incidents wired to the runtime: SessionPauses (src/svc/pause) with each
 * of its needs answered by IncidentSessions (every session of the incident) and the incident's
 * ack-effects. Built before the core starts; the incident controls are read once it has.
 */
import type { Executor, ExecutorPark } from "../../runtime/executor.ts";
import type { Caller } from "../../surfaces/http/caller-auth.ts";
import { SessionPauses } from "../pause/session-pauses.ts";
import type { IncidentSessions } from "./incident-sessions.ts";

/** The reason `resume --ack-effects` records with its acknowledgement. */
export const ACK_ON_RESUME = "operator ack (resume --ack-effects)";

export interface IncidentPauseDeps {
  coordinatorApp: string;
  /** The incident controls (available once the core has started). */
  incident(): IncidentSessions;
  /** Acknowledge the incident's ambiguous calls; resolves with how many. */
  ackEffects(sessionId: string, caller: Caller): Promise<number>;
  logError(message: string): void;
}

export function incidentPauses(deps: IncidentPauseDeps): SessionPauses {
  return new SessionPauses({
    coordinatorApp: deps.coordinatorApp,
    authorize: (sessionId, caller) => deps.incident().authorize(sessionId, caller),
    journalOf: (sessionId) => deps.incident().journalOf(sessionId),
    abortOf: (sessionId) => deps.incident().abortOf(sessionId),
    interruptIncident: (sessionId, by) => deps.incident().interrupt(sessionId, by),
    wake: (sessionId) => deps.incident().wake(sessionId),
    ackEffects: (sessionId, caller) => deps.ackEffects(sessionId, caller),
    now: () => new Date(),
    logError: (message) => deps.logError(message),
  });
}

/**
 * `executor` under a hold: while `hold` answers a refusal, the session starts no turn and refuses
 * injects; `parked` says what the session waits on from an operator (/status, D342).
 */
export function heldBy(
  executor: Executor,
  hold: () => Error | undefined,
  released?: () => void,
  parked?: () => Promise<ExecutorPark | undefined>,
): Executor {
  return {
    execute: (execution) => executor.execute(execution),
    cancel: (invocationId, cause) => executor.cancel(invocationId, cause),
    hold,
    ...(parked === undefined ? {} : { parked }),
    release: () => {
      executor.release?.();
      released?.();
    },
  };
}
