/**
 * OperatorControls: a session's operator-facing park and cancel. Owns the PauseGate and the
 * `/interrupt`, `/pause` and `/resume` requests: their `pause` frames, their audit rows, and the
 * `abandon` resume that drops what was queued (recorded, never run). The actor consults the gate
 * when scheduling and reports it in `status`; it keeps the inbox and the turn itself.
 */
import type { SessionEvent } from "../core/events.ts";
import { PauseGate, type ResumeMode, steerMessage } from "../core/pause-gate.ts";
import type { InboxItem } from "../core/session-store.ts";
import type { InjectResult, InterruptResult } from "./actor-types.ts";
import type { CancelCause } from "./executor.ts";
import type { Journal } from "./session-journal.ts";

export interface OperatorControlDeps {
  now(): Date;
  journal: Journal;
  /** Invocation id of the execution in flight, if any. */
  inFlight(): string | undefined;
  /** Cancel the execution in flight (the executor's cancel). */
  cancel(invocationId: string, cause: CancelCause): void;
  /** Resolves when the execution in flight has ended (read after cancelling it). */
  executionDone(): Promise<void>;
  /** Withdraw a continue turn waiting to run (announced as dequeued, withdrawn). */
  clearContinue(): void;
  /** Cancel an automatic compaction running after a turn (a cancel is not a failure). */
  cancelCompaction(): void;
  /** The actor's undrained inbox mirror (`abandon` empties it). */
  pending: InboxItem[];
  inject(message: string, wake: boolean): Promise<InjectResult>;
  /** Start a turn if one is due. */
  schedule(): void;
}

export class OperatorControls {
  /** Parked or not, since when and why (a parked session starts no turn). */
  readonly gate = new PauseGate();
  readonly #deps: OperatorControlDeps;

  constructor(deps: OperatorControlDeps) {
    this.#deps = deps;
  }

  /**
   * POST /interrupt: cancel the turn in flight (its terminal frame is `turn-error` canceled) and,
   * with `hold`, park the session before anything queued can start. Writes the audit row once
   * the turn has unwound. A deliberate interrupt is never auto-continued.
   */
  async interrupt(hold: boolean, caller: string | undefined): Promise<InterruptResult> {
    const deps = this.#deps;
    const inFlight = deps.inFlight();
    deps.clearContinue();
    // Between turns the session may be summarizing its history: stop that too, without waiting.
    if (inFlight === undefined) deps.cancelCompaction();
    const parked = inFlight !== undefined && hold && this.gate.pause("operator-interrupt", deps.now().toISOString());
    if (inFlight !== undefined) {
      deps.cancel(inFlight, "operator");
      await deps.executionDone();
    }
    // A resume may have released the park while the turn unwound: announce only a park that holds.
    if (parked && this.gate.paused)
      deps.journal.frame({
        type: "pause",
        state: "paused",
        reason: "operator-interrupt",
        interrupted: true,
        at: this.gate.since ?? "",
      });
    const metadata: Record<string, unknown> = { source: "operator", hold, interrupted: inFlight !== undefined };
    if (caller !== undefined) metadata.caller = caller;
    await deps.journal.append([
      {
        ...deps.journal.header("attach-interrupt", "attach/interrupt"),
        kind: "audit",
        name: "attach-interrupt",
        metadata,
      },
    ]);
    return { interrupted: inFlight !== undefined, paused: this.gate.paused };
  }

  /** POST /pause: park (the running turn finishes; no new one starts). */
  pause(reason: string | undefined): { transitioned: boolean } {
    const transitioned = this.gate.pause(reason ?? "operator-pause", this.#deps.now().toISOString());
    if (transitioned)
      this.#deps.journal.frame({
        type: "pause",
        state: "paused",
        reason: this.gate.reason ?? "operator-pause",
        at: this.gate.since ?? "",
      });
    return { transitioned };
  }

  /**
   * POST /resume: release the park. `continue` runs what is queued; `steer` queues the operator's
   * text (framed as a steer) and runs; `abandon` drops what was queued (recorded, never run).
   */
  async resume(mode: ResumeMode, steer: string | undefined): Promise<{ resumed: boolean }> {
    if (!this.gate.resume()) return { resumed: false };
    this.#deps.journal.frame({ type: "pause", state: "resumed", mode, at: this.#deps.now().toISOString() });
    if (mode === "abandon") await this.#abandonQueued();
    if (mode === "steer" && steer !== undefined) await this.#deps.inject(steerMessage(steer), true);
    this.#deps.schedule();
    return { resumed: true };
  }

  async #abandonQueued(): Promise<void> {
    // A continue turn waiting to run is work too: abandon drops it with the queue.
    this.#deps.clearContinue();
    const pending = this.#deps.pending;
    const dropped = pending.splice(0);
    if (dropped.length === 0) return;
    const ids = dropped.map((item) => item.promptId);
    const row: SessionEvent = {
      ...this.#deps.journal.header("attach-resume", "attach/resume"),
      kind: "audit",
      name: "attach-resume-abandon",
      metadata: { source: "operator", abandoned_prompt_ids: ids },
    };
    try {
      await this.#deps.journal.append([row], ids);
    } catch (error) {
      pending.unshift(...dropped);
      throw error;
    }
  }
}
