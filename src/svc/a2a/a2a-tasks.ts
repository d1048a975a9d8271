/**
 * A2A tasks on svc's sessions (docs/svc-a2a.md#tasks): a task is a coordinator session whose id is
 * `a2a-<32 hex>`. A fresh send mints the id, commits the session and a row naming its context
 * (durable before anything answers), then runs the message as a turn through SvcRuntime's turns,
 * the path every inject takes. A task's state is read, not kept: aborted is `canceled`, a pending
 * question or a gate pause `input-required`, a turn in flight `working`, a prompt whose model turn
 * completed `completed` with its answer; a turn that failed is `failed` (this process's registry).
 * `cancel` is the abort path, idempotent. Every read goes through the session's ACL, so a caller
 * sees only its own tasks (another's is not found).
 */
import { SparError } from "../../core/errors.ts";
import { type SessionEvent, isTerminalFrame } from "../../core/events.ts";
import { uuidv7 } from "../../core/ids.ts";
import type { EventLog } from "../../core/event-log.ts";
import { FeedTap, LIVE_ONLY } from "../../runtime/feed-tap.ts";
import type { SessionService } from "../../runtime/session-service.ts";
import type { Caller } from "../../surfaces/http/caller-auth.ts";
import type { SvcRuntime } from "../dispatch/svc-runtime.ts";
import { type IncomingMessage, type StreamEvent, type Task, partTexts } from "../../protocols/a2a/a2a-wire.ts";
import {
  TASK_ROW,
  type TaskIdentity,
  type TaskSnapshot,
  artifactUpdate,
  contextOf,
  encodeTask,
  StatusUpdateEncoder,
  finalUpdate,
  transcriptOutcome,
} from "./task-encoding.ts";

export interface A2aTasksDeps {
  runtime: SvcRuntime;
  sessions: SessionService;
  log: EventLog;
  /** The identity the operator's /resume and CLI act as (main listener): a contributor of every task. */
  operator: string;
}

/** The prefix of every task id svc mints (a task id is its session id). */
export const TASK_PREFIX = "a2a-";

/** Failures this process saw, by task id (a transcript cannot prove one). */
const REGISTRY_LIMIT = 10_000;

export class A2aTasks {
  readonly #deps: A2aTasksDeps;
  readonly #app: string;
  readonly #failed = new Map<string, string>();

  constructor(deps: A2aTasksDeps) {
    this.#deps = deps;
    this.#app = deps.runtime.roster.coordinator.app;
  }

  get draining(): boolean {
    return this.#deps.sessions.draining;
  }

  /**
   * The first half of `message/send` and `message/stream`, every refusal decided here (before a
   * stream opens): the text, the task (minted and committed when the message names none, else one
   * the caller may read), and its state before the turn.
   */
  async prepare(caller: Caller, message: IncomingMessage): Promise<PreparedSend> {
    const texts = partTexts(message.parts);
    if (texts.length === 0) throw new SparError("bad_request", "the message has no text parts (only text is served)");
    const task =
      message.taskId === undefined
        ? await this.#mint(caller, message.contextId)
        : await this.#existing(caller, message.taskId);
    const text = texts.join("\n");
    if (message.taskId === undefined) return { caller, task, text, fresh: true };
    return { caller, task, text, before: await this.snapshot(task, caller), fresh: false };
  }

  /**
   * Run a prepared send as a turn on its task and resolve with the task once the turn ended or
   * parked. `emit` hears the stream's frames: the snapshot, a status update per model response,
   * the artifact, the final status update. A canceled task or one waiting on an operator runs no
   * turn: it answers its durable state.
   */
  async run(send: PreparedSend, emit?: (event: StreamEvent) => void): Promise<Task> {
    const { caller, task } = send;
    if (send.before !== undefined && (send.before.state === "canceled" || send.before.state === "input-required")) {
      emit?.(encodeTask(task, send.before));
      emit?.(finalUpdate(task, send.before));
      return encodeTask(task, send.before);
    }
    emit?.(encodeTask(task, { state: "submitted", at: new Date().toISOString() }));
    this.#failed.delete(task.id);
    await this.#run(task, caller, send.text, emit);
    const after = await this.snapshot(task, caller);
    if (emit) {
      if (after.state === "completed" && after.answer !== undefined) emit(artifactUpdate(task, after.answer));
      emit(finalUpdate(task, after));
    }
    return encodeTask(task, after);
  }

  /** `tasks/get`. */
  async get(caller: Caller, id: string): Promise<Task> {
    const task = await this.#existing(caller, id);
    return encodeTask(task, await this.snapshot(task, caller));
  }

  /** A task the caller may read (`tasks/resubscribe` checks it before its stream opens). */
  find(caller: Caller, id: string): Promise<TaskIdentity> {
    return this.#existing(caller, id);
  }

  /**
   * `tasks/resubscribe`: the task's snapshot, then, while its turn runs, a status update per model
   * response; once the turn has ended (or when none runs), the artifact of a completed task and
   * the final status update. A task waiting on an operator ends the stream `input-required`: it
   * may wait for hours, and a client resubscribes once it has answered.
   */
  async follow(task: TaskIdentity, caller: Caller, emit: (event: StreamEvent) => void): Promise<void> {
    const live = await this.#deps.sessions.subscribe({ app: this.#app, sid: task.id }, caller);
    let settle = () => {};
    const turnEnded = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const updates = new StatusUpdateEncoder(task);
    const subscription = live.attach(
      new FeedTap((publication) => {
        const update = updates.publication(publication);
        if (update) emit(update);
        if (publication.type === "frame" && isTerminalFrame(publication.frame)) settle();
      }, settle),
      LIVE_ONLY,
    );
    const stopWatching = live.actor.onAbort(settle);
    try {
      const now = await this.snapshot(task, caller);
      emit(encodeTask(task, now));
      if (now.state === "working" && live.actor.status().turn_in_flight) await turnEnded;
    } finally {
      stopWatching();
      subscription.unsubscribe();
    }
    const after = await this.snapshot(task, caller);
    if (after.state === "completed" && after.answer !== undefined) emit(artifactUpdate(task, after.answer));
    emit(finalUpdate(task, after));
  }

  /** `tasks/cancel`: the abort path (terminal, the turn in flight cancelled); a second cancel answers the same. */
  async cancel(caller: Caller, id: string): Promise<Task> {
    const task = await this.#existing(caller, id);
    try {
      await this.#deps.runtime.operator.abort(task.id, caller, "A2A tasks/cancel");
    } catch (error) {
      if (!(error instanceof SparError) || error.code !== "conflict") throw error;
    }
    return encodeTask(task, await this.snapshot(task, caller));
  }

  /** The task's state as the session proves it. */
  async snapshot(task: TaskIdentity, caller: Caller): Promise<TaskSnapshot> {
    const { actor } = await this.#deps.sessions.open({ app: this.#app, sid: task.id }, caller, "read");
    const now = new Date().toISOString();
    const abort = actor.record.abort;
    if (abort) return { state: "canceled", note: `canceled: ${abort.reason}`, at: abort.at };
    const status = await this.#deps.runtime.queries.status(task.id);
    if (status.pending.length > 0) {
      const questions = status.pending.map((question) => `${question.interrupt_id}: ${question.message}`);
      return { state: "input-required", note: `waiting for an operator's answer\n${questions.join("\n")}`, at: now };
    }
    const held = this.#deps.runtime.pauses.refusal(task.id);
    if (held) return { state: "input-required", note: held.message, at: now };
    if (actor.status().state === "running") return { state: "working", at: now };
    const failed = this.#failed.get(task.id);
    if (failed !== undefined) return { state: "failed", note: failed, at: now };
    const outcome = transcriptOutcome(await this.#events(task.id));
    if (outcome.answer !== undefined) return { state: "completed", answer: outcome.answer, at: outcome.at ?? now };
    return { state: "working", at: outcome.at ?? now };
  }

  async #run(task: TaskIdentity, caller: Caller, text: string, emit?: (event: StreamEvent) => void): Promise<void> {
    const target = { app: this.#app, sid: task.id };
    const live = emit === undefined ? undefined : await this.#deps.sessions.subscribe(target, caller);
    const updates = new StatusUpdateEncoder(task);
    const subscription = live?.attach(
      new FeedTap((publication) => {
        const update = updates.publication(publication);
        if (update) emit?.(update);
      }),
      LIVE_ONLY,
    );
    try {
      await this.#deps.runtime.operator.refuseWhileWaiting(task.id);
      await this.#deps.runtime.turns.run(target, caller, text);
    } catch (error) {
      if (!(error instanceof SparError)) throw error;
      // A retryable refusal is the caller's to retry; an abort reads as canceled.
      if (error.code === "shutting_down" || error.code === "unavailable") throw error;
      if (error.code !== "conflict") this.#recordFailure(task.id, error.message);
    } finally {
      subscription?.unsubscribe();
    }
  }

  /**
   * A fresh task: its session committed before anything answers, and when the caller named a
   * context, a row keeping it (a server-assigned context is `ctx-` and the task's own hex).
   */
  async #mint(caller: Caller, contextId: string | undefined): Promise<TaskIdentity> {
    this.#deps.sessions.refuseWhileDraining();
    // Time-ordered (UUIDv7, 74 random bits): the session indexes grow at their end, not at a random page.
    const hex = uuidv7().replaceAll("-", "");
    const task = { id: `${TASK_PREFIX}${hex}`, contextId: contextId ?? `ctx-${hex}` };
    await this.#deps.sessions.create(caller, {
      app: this.#app,
      sessionID: task.id,
      viewers: [],
      contributors: [this.#deps.operator],
    });
    if (contextId === undefined) return task;
    const session = await this.#deps.runtime.queries.executorSession({ app: this.#app, id: task.id });
    if (session === undefined) throw new SparError("internal", `task ${task.id} vanished as it was created`);
    await session.journal.append([
      {
        ...session.journal.header(task.id, "a2a"),
        kind: "audit",
        name: TASK_ROW,
        metadata: { context_id: task.contextId, caller: caller.identity },
      },
    ]);
    return task;
  }

  /** A task the caller may read; not found (-32001) for any other id, prefix or not. */
  async #existing(caller: Caller, id: string): Promise<TaskIdentity> {
    if (!id.startsWith(TASK_PREFIX)) throw taskNotFound(id);
    try {
      await this.#deps.sessions.open({ app: this.#app, sid: id }, caller, "read");
    } catch (error) {
      if (error instanceof SparError && (error.code === "not_found" || error.code === "forbidden"))
        throw taskNotFound(id);
      throw error;
    }
    const contextId = contextOf(await this.#events(id)) ?? `ctx-${id.slice(TASK_PREFIX.length)}`;
    return { id, contextId };
  }

  async #events(id: string): Promise<SessionEvent[]> {
    const rows = await this.#deps.log.read({ app: this.#app, id }, 0, Number.MAX_SAFE_INTEGER);
    return rows.map((row) => row.event);
  }

  #recordFailure(id: string, message: string): void {
    if (this.#failed.size >= REGISTRY_LIMIT) {
      const oldest = this.#failed.keys().next().value;
      if (oldest !== undefined) this.#failed.delete(oldest);
    }
    this.#failed.set(id, message);
  }
}

export interface PreparedSend {
  caller: Caller;
  task: TaskIdentity;
  text: string;
  /** A continued task's state before the turn (a fresh one has none). */
  before?: TaskSnapshot;
  fresh: boolean;
}

export function taskNotFound(id: string): SparError {
  return new SparError("not_found", `no task ${JSON.stringify(id)}`);
}
