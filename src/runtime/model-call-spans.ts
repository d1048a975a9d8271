/**
 * The turn worker's side of the model calls' spans (tracing on, D324): each call's span is named
 * in the worker, a child of the turn's span, so the provider request carries its context at once
 * (no round trip to the main thread before every call). The main thread records the span later,
 * under that id and start time: from the committed response that carries it, or from the turn's
 * outcome when the call never answered. Pure apart from the clock and the random id.
 */
import type { TraceCarrier } from "../core/session-store.ts";
import { childCarrier, newSpanId } from "../core/trace-carrier.ts";
import type { ModelCallSpan, ResponseDraft, TurnOutcome } from "./channel.ts";

export class ModelCallSpans {
  readonly #turn: TraceCarrier;
  #open: ModelCallSpan | undefined;

  constructor(turn: TraceCarrier) {
    this.#turn = turn;
  }

  /** A model call starts: its span named now; the headers its provider request carries. */
  starting(): Record<string, string> {
    this.#open = { spanId: newSpanId(), startedAtMs: performance.timeOrigin + performance.now() };
    return { ...childCarrier(this.#turn, this.#open.spanId) };
  }

  /** The call answered: its response, to commit, with the call's span (which is no longer open). */
  answered(draft: ResponseDraft): ResponseDraft {
    const call = this.#open;
    this.#open = undefined;
    return call === undefined ? draft : { ...draft, call };
  }

  /** The turn ended: a call still open (it failed or was cancelled) goes with the outcome. */
  ended(outcome: TurnOutcome): TurnOutcome {
    const call = this.#open;
    this.#open = undefined;
    return call === undefined || outcome.status === "completed" ? outcome : { ...outcome, modelCall: call };
  }
}
