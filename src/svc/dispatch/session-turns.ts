/**
 * SessionTurns: run one turn on a session through the runtime core's SessionService and resolve
 * once it has ended or parked (its next terminal frame). The session is created on first use,
 * owned by the caller. Turns of one session run one after another: a second request waits for the
 * first one's turn, so each answer is its own turn's end. svc's inject, resume and specialist
 * delegation all go through here.
 */
import { SparError } from "../../core/errors.ts";
import type { Principal } from "../../core/acl.ts";
import { type Publication, type TurnCompleteFrame, type TurnErrorFrame, isTerminalFrame } from "../../core/events.ts";
import type { SessionKey } from "../../core/session-key.ts";
import type { GuardrailName } from "../../core/guardrails.ts";
import { abortedError } from "../../runtime/session-abort.ts";
import type { SessionActor } from "../../runtime/session-actor.ts";
import type { FeedSink } from "../../runtime/session-feed.ts";
import { LIVE_ONLY } from "../../runtime/feed-tap.ts";
import type { SessionService, SessionTarget } from "../../runtime/session-service.ts";

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

/** The refusal of a turn on a session a guardrail halted (409). */
function haltedError(sessionId: string, halted: { guardrail: GuardrailName; reason: string }): SparError {
  return new SparError(
    "conflict",
    `session ${JSON.stringify(sessionId)} is halted by the ${halted.guardrail} guardrail (${halted.reason}); reset it first`,
  );
}

/** The turn-error code of a model reply a dispatch shape could not use (answered 502). */
export const UNUSABLE_REPLY = "UNUSABLE_REPLY";

export interface TurnRun {
  key: SessionKey;
  promptId: string;
}

export class SessionTurns {
  readonly #sessions: SessionService;
  /** The refusal of a session's turns while a hold (svc's gate pause) lasts. */
  readonly #held: (sessionId: string) => SparError | undefined;
  /** The last turn requested on each session, which the next one waits for. */
  readonly #tails = new Map<string, Promise<unknown>>();

  constructor(sessions: SessionService, held: (sessionId: string) => SparError | undefined = () => undefined) {
    this.#sessions = sessions;
    this.#held = held;
  }

  /**
   * Queue `message` on the session and resolve once the turn it starts has ended or parked.
   * `contributors`: who else may write to the session if this turn creates it (a protocol
   * listener's sessions stay answerable by the operator on the main listener).
   */
  run(
    target: SessionTarget,
    caller: Principal,
    message: string,
    contributors: readonly string[] = [],
  ): Promise<TurnRun> {
    const name = `${target.app ?? ""}\u0000${target.sid}`;
    const previous = this.#tails.get(name) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.#run(target, caller, message, contributors));
    this.#tails.set(name, run);
    void run.finally(() => {
      if (this.#tails.get(name) === run) this.#tails.delete(name);
    });
    return run;
  }

  async #run(
    target: SessionTarget,
    caller: Principal,
    message: string,
    contributors: readonly string[],
  ): Promise<TurnRun> {
    // A held incident creates no session and starts no turn (a specialist's after an abort).
    const held = this.#held(target.sid);
    if (held) throw held;
    const session = await this.open(target, caller, contributors);
    const sink = new TurnEndSink();
    const subscription = session.attach(sink, LIVE_ONLY);
    const stopWatching = session.actor.onAbort((abort) => sink.fail(abortedError(target.sid, abort)));
    try {
      const { key, result } = await this.#sessions.inject(target, caller, message, { wake: true });
      if (result.halted) throw haltedError(target.sid, result.halted);
      const end = await sink.ended;
      if (end.type === "turn-error") throw this.#turnFailed(target.sid, session.actor, end);
      return { key, promptId: result.promptId };
    } finally {
      stopWatching();
      subscription.unsubscribe();
    }
  }

  /**
   * Why a turn ended in error: aborted, halted by a guardrail or gate-paused (409), cut by the shutdown (503),
   * a model reply a dispatch shape could not use (502), else 500.
   */
  #turnFailed(sessionId: string, actor: SessionActor, end: TurnErrorFrame): SparError {
    const abort = actor.record.abort;
    if (abort) return abortedError(sessionId, abort);
    const halted = actor.guards.halted;
    if (halted) return haltedError(sessionId, halted);
    const held = this.#held(sessionId);
    if (held) return held;
    if (this.#sessions.draining)
      return new SparError("shutting_down", "the turn was cut by the daemon's shutdown; retry against its successor");
    if (end.code === UNUSABLE_REPLY) return new SparError("bad_gateway", end.message);
    if (end.code === "DEADLINE_EXCEEDED") return new SparError("deadline_exceeded", end.message);
    return new SparError("internal", `the turn failed: ${end.message}`);
  }

  /**
   * The session for its feed; created on its first turn (the caller owns it). A protocol listener
   * opens it too, to follow a run's publications from before its turn starts.
   */
  async open(target: SessionTarget, caller: Principal, contributors: readonly string[] = []) {
    try {
      return await this.#sessions.subscribe(target, caller);
    } catch (error) {
      if (!(error instanceof SparError) || error.code !== "not_found") throw error;
      this.#sessions.refuseWhileDraining();
      const app = target.app === undefined ? {} : { app: target.app };
      await this.#sessions
        .create(caller, { ...app, sessionID: target.sid, viewers: [], contributors: [...contributors] })
        .catch((raced) => {
          // Two first turns at once: the other one created it.
          if (!(raced instanceof SparError) || raced.code !== "conflict") throw raced;
        });
      return await this.#sessions.subscribe(target, caller);
    }
  }
}
