/**
 * The daemon behind svc's main listener: an inject runs as a turn on its incident session through
 * the runtime core's SessionService (the session is created on its first inject, owned by the
 * caller) and is answered once that turn has ended. Injects of one session run one after another:
 * the next waits for the previous turn, so each one's answer is its own turn's end.
 */
import { SparError } from "../core/errors.ts";
import { isTerminalFrame, type Publication, type TurnCompleteFrame, type TurnErrorFrame } from "../core/events.ts";
import type { GuardrailName } from "../core/guardrails.ts";
import { abortedError } from "../runtime/session-abort.ts";
import type { SessionActor } from "../runtime/session-actor.ts";
import type { FeedSink } from "../runtime/session-feed.ts";
import type { SessionService, SessionTarget } from "../runtime/session-service.ts";
import type { Caller } from "../surfaces/http/caller-auth.ts";
import type { InjectOutcome, InjectRequest, MainListenerPort } from "./listener/main-listener.ts";

/** A feed subscriber that only waits for the next terminal frame of the session's turns. */
class TurnEndSink implements FeedSink {
  readonly replayBatch = 64;
  readonly bytesDelivered = 0;
  closed = false;
  readonly ended: Promise<TurnCompleteFrame | TurnErrorFrame>;
  #resolve: (frame: TurnCompleteFrame | TurnErrorFrame) => void = () => {};
  #reject: (error: Error) => void = () => {};

  constructor() {
    this.ended = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  deliver(publication: Publication): boolean {
    if (publication.type === "frame" && isTerminalFrame(publication.frame)) this.#resolve(publication.frame);
    return true;
  }

  whenWritable(): Promise<void> {
    return Promise.resolve();
  }

  close(reason: string): void {
    this.closed = true;
    this.#reject(new SparError("unavailable", `the session's turn did not finish: ${reason}`));
  }

  /** Stop waiting with `error` (the session was aborted: its turn may never run). */
  fail(error: SparError): void {
    this.#reject(error);
  }
}

/** The refusal of an inject into a session a guardrail halted (409). */
function haltedError(sessionId: string, halted: { guardrail: GuardrailName; reason: string }): SparError {
  return new SparError(
    "conflict",
    `session ${JSON.stringify(sessionId)} is halted by the ${halted.guardrail} guardrail (${halted.reason}); reset it first`,
  );
}

/** A cursor past every row: the subscription carries live publications only. */
const LIVE_ONLY = Number.MAX_SAFE_INTEGER;

export class SessionInjectPort implements MainListenerPort {
  readonly #sessions: SessionService;
  readonly #metrics: () => string;
  /** The last inject of each session, which the next one waits for. */
  readonly #tails = new Map<string, Promise<unknown>>();

  constructor(sessions: SessionService, metrics: () => string) {
    this.#sessions = sessions;
    this.#metrics = metrics;
  }

  metrics(): string {
    return this.#metrics();
  }

  inject(request: InjectRequest): Promise<InjectOutcome> {
    const previous = this.#tails.get(request.sessionId) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.#run(request));
    this.#tails.set(request.sessionId, run);
    void run.finally(() => {
      if (this.#tails.get(request.sessionId) === run) this.#tails.delete(request.sessionId);
    });
    return run;
  }

  async #run(request: InjectRequest): Promise<InjectOutcome> {
    const target: SessionTarget = { app: undefined, sid: request.sessionId };
    const session = await this.#open(target, request.caller);
    const sink = new TurnEndSink();
    const subscription = session.attach(sink, LIVE_ONLY);
    const stopWatching = session.actor.onAbort((abort) => sink.fail(abortedError(request.sessionId, abort)));
    try {
      const { result } = await this.#sessions.inject(target, request.caller, request.message, { wake: true });
      if (result.halted) throw haltedError(request.sessionId, result.halted);
      const end = await sink.ended;
      if (end.type === "turn-error") throw this.#turnFailed(request.sessionId, session.actor, end);
      return { promptId: result.promptId, state: session.actor.status().state === "paused" ? "paused" : "idle" };
    } finally {
      stopWatching();
      subscription.unsubscribe();
    }
  }

  /** Why a turn ended in error: aborted or halted by a guardrail (409), cut by the shutdown (503), else 500. */
  #turnFailed(sessionId: string, actor: SessionActor, end: TurnErrorFrame): SparError {
    const abort = actor.record.abort;
    if (abort) return abortedError(sessionId, abort);
    const halted = actor.guards.halted;
    if (halted) return haltedError(sessionId, halted);
    if (this.#sessions.draining)
      return new SparError("shutting_down", "the turn was cut by the daemon's shutdown; retry against its successor");
    return new SparError("internal", `the turn failed: ${end.message}`);
  }

  /** The session for its feed; created on its first inject (the caller owns it). */
  async #open(target: SessionTarget, caller: Caller) {
    try {
      return await this.#sessions.subscribe(target, caller);
    } catch (error) {
      if (!(error instanceof SparError) || error.code !== "not_found") throw error;
      this.#sessions.refuseWhileDraining();
      await this.#sessions.create(caller, { sessionID: target.sid, viewers: [], contributors: [] }).catch((raced) => {
        // Two first injects at once: the other one created it.
        if (!(raced instanceof SparError) || raced.code !== "conflict") throw raced;
      });
      return await this.#sessions.subscribe(target, caller);
    }
  }
}
