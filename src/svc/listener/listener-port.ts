/**
 * What svc's main listener asks of the daemon behind it (the port), and the shapes it passes:
 * the listener parses, calls one method and encodes the answer. Types only.
 */
import type { Caller } from "../../surfaces/http/caller-auth.ts";

export interface InjectRequest {
  sessionId: string;
  /** The user message the model sees. */
  message: string;
  caller: Caller;
}

/** A session's state after a turn: `paused` while a question waits, `ambiguous` while an effect is unknown. */
export type SessionState = "idle" | "paused" | "ambiguous";

/** POST /ack-effects's request, the caller resolved by the listener. */
export interface AckEffectsRequest {
  sessionId: string;
  reason: string;
  caller: Caller;
}

/** A question waiting for an operator: what POST /resume answers. */
export interface PendingQuestion {
  interrupt_id: string;
  /** The agent whose call is parked (a specialist's name). */
  agent: string;
  /** The question, e.g. `Approve mutating call apply_change(replicas=10)?`. */
  message: string;
}

/** A session's state as its gate rows say, and the questions it waits on. */
export interface SessionStatus {
  state: SessionState;
  pending: PendingQuestion[];
}

/** How an inject's turn ended: the session's state once it had. */
export interface InjectOutcome extends SessionStatus {
  promptId: string;
  /** The result a dispatch shape (graph, fanout, bounded) recorded in this turn: whose, and what. */
  result?: { specialist: string; output: Record<string, unknown> };
}

/** POST /resume's request, the caller resolved by the listener. */
export interface ResumeRequest {
  sessionId: string;
  interruptId: string;
  response: unknown;
  caller: Caller;
  /** Acknowledge the incident's ambiguous calls before the answer (`resume --ack-effects`). */
  ackEffects?: boolean;
}

/** How a resumed question was answered, once the session's turn after it ended or parked. */
export interface ResumeOutcome extends SessionStatus {
  outcome: string;
  detail?: string;
}

/** What the listener asks of the daemon. */
export interface MainListenerPort {
  /** Queue the message on the session (created when new) and resolve once its turn has ended or parked. */
  inject(request: InjectRequest): Promise<InjectOutcome>;
  /**
   * Answer a parked question and run the session on. Errors: not_found (no such question),
   * bad_request (not a verdict; a refused scope, the question stays open), conflict (answered before).
   */
  resume(request: ResumeRequest): Promise<ResumeOutcome>;
  /** Acknowledge the session's calls whose effect is unknown (404 for no such session). */
  ackEffects(request: AckEffectsRequest): Promise<SessionStatus & { acknowledged: number }>;
  /** The Prometheus text of `/metrics`. */
  metrics(): string;
}
