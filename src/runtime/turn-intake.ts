/**
 * TurnIntake: the work waiting for a session's next turn, and the opening of that turn. Owns the
 * undrained inbox mirror and a bare wake request; says whether a turn is due; runs the guardrail
 * pre-flight; takes what the turn drains (a human message supersedes an armed continue turn); and
 * commits the turn's prompt row, putting the messages back when the store refuses it. It never
 * decides when a turn runs or retries (the actor's `schedule` does) and never executes one.
 */
import type { LiveFrame, SessionEvent } from "../core/events.ts";
import { uuidv7 } from "../core/ids.ts";
import type { SessionKey } from "../core/session-key.ts";
import type { InboxItem } from "../core/session-store.ts";
import type { ArmedContinue } from "./continue-slot.ts";
import type { ContinueOffers } from "./continue-offers.ts";
import { Turn, type TurnDeps } from "./turn-runner.ts";
import { turnStartRows } from "./turn-start-rows.ts";

export interface TurnIntakeDeps {
  key: SessionKey;
  /** What every turn of the session works with (its context, conversation, guards, feed). */
  session: TurnDeps;
  /** Auto-continue: its slot holds the continue turn waiting to run. */
  continues: ContinueOffers;
  /** Append rows draining `drained` from the durable inbox; publish `before` ahead of them. */
  append(events: SessionEvent[], drained: readonly string[], before: LiveFrame[]): Promise<void>;
}

/** A turn that passed the pre-flight, with what it drains, not yet committed. */
export interface PreparedTurn {
  turn: Turn;
  items: InboxItem[];
  armed: ArmedContinue | undefined;
}

export class TurnIntake {
  /** The undrained inbox mirror (shared with OperatorControls, which may empty it). */
  readonly pending: InboxItem[];
  readonly #deps: TurnIntakeDeps;
  #bareWake = false;

  constructor(deps: TurnIntakeDeps, pending: InboxItem[]) {
    this.#deps = deps;
    this.pending = pending;
  }

  /** A turn is due: a bare wake, an armed continue turn, or an inbox message asking to wake. */
  get due(): boolean {
    return this.#bareWake || this.#deps.continues.slot.ready || this.humanWaiting;
  }

  /** An inbox message asks for a turn. */
  get humanWaiting(): boolean {
    return this.pending.some((item) => item.wake);
  }

  /** Nothing queued, no bare wake, no continue turn armed or waiting out its backoff. */
  get empty(): boolean {
    return this.pending.length === 0 && !this.#bareWake && !this.#deps.continues.slot.occupied;
  }

  /** POST /wake with no prompt: the next turn runs with no new message. */
  wakeBare(): void {
    this.#bareWake = true;
  }

  /** Guardrail pre-flight, then take what the turn will drain. Undefined: no turn starts. */
  async prepare(): Promise<PreparedTurn | undefined> {
    const { key, session, continues } = this.#deps;
    const refused = await session.guards.preflight().catch((error: unknown) => {
      session.context.logError(`session ${key.id}: guardrail pre-flight: ${String(error)}`);
      return session.guards.halted;
    });
    if (refused) {
      // No frames: the inbox keeps its messages until a reset (spec: turn refused while halted).
      this.#bareWake = false;
      continues.slot.clear();
      session.context.turnRefused(refused.guardrail);
      return undefined;
    }
    const items = this.pending.splice(0);
    const bare = this.#bareWake;
    this.#bareWake = false;
    // A human message supersedes a waiting continue turn.
    const taken = continues.slot.take();
    const armed = items.length > 0 ? undefined : taken;
    if (items.length === 0 && !bare && !armed) return undefined;
    const turn = new Turn(session, `e-${uuidv7()}`, items[0]?.promptId ?? armed?.promptId ?? uuidv7());
    return { turn, items, armed };
  }

  /**
   * Drain the inbox into the turn's prompt row (one transaction, after rows repairing a tool call
   * a cut turn left without its result), then announce the turn. Returns the bundled human
   * messages ("" when none), or undefined when the store refused (the messages are queued again).
   */
  async start({ turn, items, armed }: PreparedTurn): Promise<string | undefined> {
    const { key, session, continues } = this.#deps;
    const { human, events, drainedPromptIds, before, messages } = turnStartRows({
      invocationId: turn.invocationId,
      items,
      armed,
      history: session.history,
      modelName: session.context.model.name,
      framePrompt: (text) => session.guards.framePrompt(text),
      header: (invocationId, author) => session.header(invocationId, author),
    });
    try {
      await this.#deps.append(events, drainedPromptIds, before);
    } catch (error) {
      this.pending.unshift(...items);
      session.context.logError(`session ${key.id}: could not start a turn: ${String(error)}`);
      return undefined;
    }
    continues.started(armed);
    session.history.push(...messages);
    return human;
  }
}
