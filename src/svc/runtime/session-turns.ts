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
import type { FeedSink } from "../../runtime/session-feed.ts";
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
}

/** A cursor past every row: the subscription carries live publications only. */
const LIVE_ONLY = Number.MAX_SAFE_INTEGER;

export interface TurnRun {
  key: SessionKey;
  promptId: string;
}

export class SessionTurns {
  readonly #sessions: SessionService;
  /** The last turn requested on each session, which the next one waits for. */
  readonly #tails = new Map<string, Promise<unknown>>();

  constructor(sessions: SessionService) {
    this.#sessions = sessions;
  }

  /** Queue `message` on the session and resolve once the turn it starts has ended or parked. */
  run(target: SessionTarget, caller: Principal, message: string): Promise<TurnRun> {
    const name = `${target.app ?? ""}\u0000${target.sid}`;
    const previous = this.#tails.get(name) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.#run(target, caller, message));
    this.#tails.set(name, run);
    void run.finally(() => {
      if (this.#tails.get(name) === run) this.#tails.delete(name);
    });
    return run;
  }

  async #run(target: SessionTarget, caller: Principal, message: string): Promise<TurnRun> {
    const session = await this.#open(target, caller);
    const sink = new TurnEndSink();
    const subscription = session.attach(sink, LIVE_ONLY);
    try {
      const { key, result } = await this.#sessions.inject(target, caller, message, { wake: true });
      if (result.halted) {
        throw new SparError(
          "conflict",
          `session ${JSON.stringify(target.sid)} is halted by the ${result.halted.guardrail} guardrail (${result.halted.reason}); reset it first`,
        );
      }
      const end = await sink.ended;
      if (end.type === "turn-error") throw new SparError("internal", `the turn failed: ${end.message}`);
      return { key, promptId: result.promptId };
    } finally {
      subscription.unsubscribe();
    }
  }

  /** The session for its feed; created on its first turn (the caller owns it). */
  async #open(target: SessionTarget, caller: Principal) {
    try {
      return await this.#sessions.subscribe(target, caller);
    } catch (error) {
      if (!(error instanceof SparError) || error.code !== "not_found") throw error;
      this.#sessions.refuseWhileDraining();
      const app = target.app === undefined ? {} : { app: target.app };
      await this.#sessions
        .create(caller, { ...app, sessionID: target.sid, viewers: [], contributors: [] })
        .catch((raced) => {
          // Two first turns at once: the other one created it.
          if (!(raced instanceof SparError) || raced.code !== "conflict") throw raced;
        });
      return await this.#sessions.subscribe(target, caller);
    }
  }
}
