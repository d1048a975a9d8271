/**
 * ContinueOffers: one session's side of auto-continue. Keeps the interruption sequence (re-drives
 * since the last human prompt) and the turn a restart cut, decides which ended turns are offered
 * (a transient failure, after a backoff; an output-cap cut, at once; the restart cut, once), asks
 * the daemon-wide AutoContinuer, and when granted announces the continue turn and arms its
 * ContinueSlot. The actor decides when the armed turn runs (it takes the slot).
 */
import { type ContinueCause, type CutTurn, findCutTurn, isOutputCap, sequenceCount } from "../core/auto-continue.ts";
import type { CommittedRow } from "../core/events.ts";
import { uuidv7 } from "../core/ids.ts";
import type { SessionKey } from "../core/session-key.ts";
import type { ActorContext } from "./actor-types.ts";
import { type ArmedContinue, ContinueSlot } from "./continue-slot.ts";
import type { ExecutionEnd } from "./executor.ts";
import type { Journal } from "./session-journal.ts";
import { ZERO_TIME } from "../core/zero-time.ts";

export interface ContinueOfferDeps {
  key: SessionKey;
  context: Pick<ActorContext, "autoContinue" | "now" | "logError">;
  /** The session is being deleted: nothing is offered or armed. */
  retired(): boolean;
  halted(): boolean;
  /** Invocation id of the turn in flight, if any. */
  turnInFlight(): string | undefined;
  /** Announces and withdraws continue turns (frames only: nothing here is durable). */
  journal: Pick<Journal, "frame">;
  /** A continue turn was armed: start it if nothing else runs. */
  schedule(): void;
}

export class ContinueOffers {
  /** The continue turn waiting to run, if any. */
  readonly slot = new ContinueSlot();
  readonly #deps: ContinueOfferDeps;
  /** Re-drives since the last human prompt (auto-continue sequence). */
  #sequence: number;
  /** The turn a restart cut, found when the session was rebuilt (offered to auto-continue once). */
  #cutByRestart: CutTurn | undefined;

  constructor(deps: ContinueOfferDeps, rows: readonly CommittedRow[]) {
    this.#deps = deps;
    this.#sequence = sequenceCount(rows);
    this.#cutByRestart = findCutTurn(rows);
  }

  /**
   * The continue turn the turn starting now runs: none when human messages are waiting (they
   * supersede it, armed or still in its backoff: it is withdrawn), none while it waits out its
   * backoff.
   */
  forNextTurn(humanWaiting: boolean): ArmedContinue | undefined {
    if (!humanWaiting) return this.slot.take();
    this.withdraw();
    return undefined;
  }

  /** A turn started: a continue turn extends the sequence; any other turn starts a new one. */
  started(armed: ArmedContinue | undefined): void {
    this.#sequence = armed ? this.#sequence + 1 : 0;
  }

  /**
   * Offer the turn a restart cut, once, unless inbox work is waiting (that turn runs anyway and a
   * human message starts a new sequence).
   */
  async offerRestart(wakeWaiting: boolean): Promise<void> {
    const cut = this.#cutByRestart;
    this.#cutByRestart = undefined;
    if (!cut || wakeWaiting) return;
    await this.#offer("restart", cut.interruption, cut.at, 0);
  }

  /** A turn ended: offer a continue for a transient failure (after a backoff) or an output-cap cut. */
  afterTurn(invocationId: string, end: ExecutionEnd): void {
    const { context } = this.#deps;
    const transient =
      end.status === "failed" && (end.error?.kind === "rate_limited" || end.error?.kind === "transient_network");
    const outputCap = end.status === "completed" && isOutputCap(end.finishReason);
    if (!transient && !outputCap) return;
    const delay = transient ? context.autoContinue.settings.backoffMs * 2 ** Math.min(this.#sequence, 6) : 0;
    void this.#offer(transient ? "transient" : "output-cap", invocationId, context.now().toISOString(), delay).catch(
      (error: unknown) => context.logError(`session ${this.#deps.key.id}: auto-continue: ${String(error)}`),
    );
  }

  /** Ask the daemon-wide guards (and the store claim); when granted, arm a continue turn. */
  async #offer(cause: ContinueCause, interruption: string, at: string, delayMs: number): Promise<void> {
    const deps = this.#deps;
    const continuer = deps.context.autoContinue;
    if (!continuer.settings.enabled || deps.retired()) return;
    const inFlight = deps.turnInFlight();
    const approved = await continuer.approve({
      key: deps.key,
      cause,
      interruption,
      at,
      sequence: this.#sequence,
      halted: deps.halted(),
      // The ending turn is the interruption itself, not a turn in flight.
      turnInFlight: inFlight !== undefined && inFlight !== interruption,
    });
    if (!approved || deps.retired()) return;
    const armed: ArmedContinue = { cause, interruption, promptId: uuidv7(), attempt: this.#sequence + 1 };
    deps.journal.frame({
      type: "inbox",
      state: "queued",
      promptId: armed.promptId,
      queuedAt: deps.context.now().toISOString(),
    });
    this.slot.arm(armed, delayMs, () => deps.schedule());
  }

  /**
   * Drop the continue turn the slot holds, if any (an interrupt, an abandon, a human message that
   * supersedes it): its announced `inbox` item leaves the queue with a `dequeued` frame marked
   * `withdrawn`, so a client counting the queue is not left with a phantom.
   */
  withdraw(): void {
    const dropped = this.slot.clear();
    if (dropped)
      this.#deps.journal.frame({
        type: "inbox",
        state: "dequeued",
        promptId: dropped.promptId,
        queuedAt: ZERO_TIME,
        withdrawn: true,
      });
  }
}
