/**
 * AguiRuns: the daemon side of an AG-UI run (docs/svc-agui.md#the-run-stream). `prepare` decides
 * every refusal before the stream opens: the session the run lands on (`run-input.ts`), a reserved
 * id (400), `per_run` resumes without `parentRunId` (400), a resume naming no open interrupt of the
 * session (409), a fresh run on a thread that still waits on interrupts (409, as the AG-UI client
 * itself refuses) or on a session the caller may not write (409, D343), a resolved payload that is
 * no answer to its question (400). `stream` then runs through svc's existing paths (SvcRuntime): a
 * fresh run is a turn on the session, a resume is one POST /resume answer per entry (resolved: the
 * payload is the answer; cancelled: a rejection), approved as the authenticated caller. It yields
 * RUN_STARTED, STATE_SNAPSHOT, the coordinator session's message frames as the model streams them
 * (agui-events.ts, D296), then exactly one terminal frame.
 */
import * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import type { Caller } from "../../surfaces/http/caller-auth.ts";
import { RESERVED_SUFFIX } from "../listener/inject-envelope.ts";
import { VerdictPayload } from "../gate/verdict.ts";
import { VERDICT_RESPONSE_SCHEMA } from "../ops/incident-questions.ts";
import { RESULT_RESPONSE_SCHEMA } from "../dispatch/result-approval.ts";
import type { SvcRuntime } from "../dispatch/svc-runtime.ts";
import type { AguiSessionModel } from "../workload/workload.ts";
import type { Publication } from "../../core/events.ts";
import { FeedTap, LIVE_ONLY } from "../../runtime/feed-tap.ts";
import {
  type AguiEvent,
  type AguiInterrupt,
  AguiMessageEncoder,
  type RunErrorCode,
  type RunOutcome,
} from "./agui-events.ts";
import { EventQueue } from "./event-queue.ts";
import {
  type ResumeEntry,
  type RunAgentInput,
  lastUserText,
  runInterruptId,
  runSessionId,
  splitRunInterruptId,
} from "./run-input.ts";

/** A run that passed every check: what the stream does. */
export interface PreparedRun {
  input: RunAgentInput;
  sessionId: string;
  caller: Caller;
  /** The answers to give (resume), or the message to run (fresh). */
  work: { kind: "resume"; answers: Answer[] } | { kind: "turn"; message: string };
}

interface Answer {
  interruptId: string;
  response: unknown;
}

type QuestionKind = "write-gate" | "result";

const CANCELLED_NOTE = "cancelled by the AG-UI client";
const VERDICTS = new Set(["approve", "reject", "edit"]);

export class AguiRuns {
  readonly #runtime: SvcRuntime;
  readonly #model: AguiSessionModel;
  /** The main listener's caller: a run's new session lists it as a contributor (abort, /resume, the CLI). */
  readonly #operator: string;

  constructor(runtime: SvcRuntime, model: AguiSessionModel, operator: string) {
    this.#runtime = runtime;
    this.#model = model;
    this.#operator = operator;
  }

  /** Every refusal of the run, decided before its stream opens. */
  async prepare(input: RunAgentInput, caller: Caller): Promise<PreparedRun> {
    const resuming = (input.resume?.length ?? 0) > 0;
    if (resuming && this.#model === "per_run" && input.parentRunId === undefined)
      throw new SparError("bad_request", "a resume under per_run must carry parentRunId naming the run that parked");
    const named = resuming && this.#model === "per_run" ? namedSession(input.resume ?? []) : undefined;
    const sessionId = named?.sessionId ?? runSessionId(input, this.#model);
    if (sessionId.endsWith(RESERVED_SUFFIX))
      throw new SparError("bad_request", `session id ${JSON.stringify(sessionId)} is reserved (${RESERVED_SUFFIX})`);
    const exists = await this.#mayWrite(sessionId, caller);
    // A session someone else holds cannot be created again: refused before the stream, saying nothing of it (D343).
    if (!exists && !resuming && this.#runtime.incident.exists(sessionId)) throw unavailable(input, this.#model);
    const open = exists ? await this.#openQuestions(sessionId) : new Map<string, QuestionKind>();
    if (resuming) {
      const entries = named?.entries ?? input.resume ?? [];
      const answers = entries.map((entry) => answerFor(entry, open, sessionId));
      return { input, sessionId, caller, work: { kind: "resume", answers } };
    }
    if (open.size > 0)
      throw new SparError(
        "conflict",
        `thread ${JSON.stringify(input.threadId)} waits on interrupts ${[...open.keys()].join(", ")}: answer them with a resume run first`,
        { interrupts: [...open.keys()] },
      );
    const message = lastUserText(input);
    if (message === undefined || message.trim() === "")
      throw new SparError("bad_request", "the run has no user message with text to run");
    return { input, sessionId, caller, work: { kind: "turn", message } };
  }

  /**
   * The run's events, ending in exactly one terminal frame. The session's publications are
   * followed from before the work starts, so text and tool-call frames reach the client as the
   * model streams them; once the work settles, the rows it committed that did not stream are
   * encoded from the log (AguiMessageEncoder skips what streamed), anything left open is closed,
   * and the terminal frame follows.
   */
  async *stream(run: PreparedRun): AsyncGenerator<AguiEvent> {
    const { input } = run;
    yield {
      type: "RUN_STARTED",
      threadId: input.threadId,
      runId: input.runId,
      ...(input.parentRunId === undefined ? {} : { parentRunId: input.parentRunId }),
    };
    yield { type: "STATE_SNAPSHOT", snapshot: input.state ?? {} };
    const encoder = new AguiMessageEncoder();
    const queue = new EventQueue<AguiEvent>();
    const finished = this.#follow(run, (publication) => queue.push(encoder.publication(publication))).then(
      async (before) => {
        const swept = (await this.#events(run.sessionId)).slice(before).flatMap((event) => encoder.row(event));
        const interrupts = await this.#interrupts(run.sessionId);
        const outcome: RunOutcome = interrupts.length > 0 ? { type: "interrupt", interrupts } : { type: "success" };
        return [
          ...swept,
          ...encoder.close(),
          { type: "RUN_FINISHED", threadId: input.threadId, runId: input.runId, outcome } as const,
        ];
      },
    );
    yield* queue.until(
      finished.catch((error: unknown) => [...encoder.close(), { type: "RUN_ERROR", ...runError(error) } as const]),
    );
  }

  /**
   * Do the run's work with `observe` hearing the session's publications throughout; resolves
   * with how many rows the session had before.
   */
  async #follow(run: PreparedRun, observe: (publication: Publication) => void): Promise<number> {
    const target = { app: this.#runtime.roster.coordinator.app, sid: run.sessionId };
    const before = (await this.#events(run.sessionId)).length;
    if (run.work.kind === "turn") await this.#runtime.operator.refuseWhileWaiting(run.sessionId);
    const session = await this.#runtime.turns.open(target, run.caller, [this.#operator]);
    const subscription = session.attach(new FeedTap(observe), LIVE_ONLY);
    try {
      if (run.work.kind === "turn")
        await this.#runtime.turns.run(target, run.caller, run.work.message, [this.#operator]);
      else
        for (const answer of run.work.answers)
          await this.#runtime.operator.resume({ sessionId: run.sessionId, ...answer, caller: run.caller });
    } finally {
      subscription.unsubscribe();
    }
    return before;
  }

  /** Whether the session exists and the caller may write to it (another's session looks absent). */
  async #mayWrite(sessionId: string, caller: Caller): Promise<boolean> {
    try {
      await this.#runtime.incident.authorize(sessionId, caller);
      return true;
    } catch (error) {
      if (error instanceof SparError && error.code === "not_found") return false;
      throw error;
    }
  }

  async #openQuestions(sessionId: string): Promise<Map<string, QuestionKind>> {
    const { pending } = await this.#runtime.queries.status(sessionId);
    const ledger = await (await this.#runtime.queries.approvalsOf(sessionId))?.ledger();
    return new Map(
      pending.map((question) => [
        question.interrupt_id,
        ledger?.entry(question.interrupt_id) === undefined ? "write-gate" : "result",
      ]),
    );
  }

  async #interrupts(sessionId: string): Promise<AguiInterrupt[]> {
    const { pending } = await this.#runtime.queries.status(sessionId);
    const kinds = await this.#openQuestions(sessionId);
    return pending.map((question) => {
      const result = kinds.get(question.interrupt_id) === "result";
      return {
        id: this.#model === "per_run" ? runInterruptId(sessionId, question.interrupt_id) : question.interrupt_id,
        reason: result ? "result_approval" : "tool_approval",
        message: question.message,
        responseSchema: result ? RESULT_RESPONSE_SCHEMA : VERDICT_RESPONSE_SCHEMA,
        metadata: { agent: question.agent },
      };
    });
  }

  async #events(sessionId: string) {
    const session = await this.#runtime.queries.executorSession({
      app: this.#runtime.roster.coordinator.app,
      id: sessionId,
    });
    return session === undefined ? [] : await this.#runtime.queries.events(session);
  }
}

/**
 * per_run: the session a resume's interrupt ids name (D299), with the entries' own interrupt ids;
 * undefined when no entry names one (an id from elsewhere: the parent run's session is tried).
 * Entries naming two sessions are one resume of two runs: refused.
 */
function namedSession(entries: readonly ResumeEntry[]): { sessionId: string; entries: ResumeEntry[] } | undefined {
  const split = entries.map((entry) => ({ entry, named: splitRunInterruptId(entry.interruptId) }));
  const sessions = new Set(split.flatMap(({ named }) => (named === undefined ? [] : [named.sessionId])));
  if (sessions.size === 0) return undefined;
  if (sessions.size > 1)
    throw new SparError(
      "bad_request",
      `one resume answers interrupts of one run; these name ${[...sessions].join(", ")}`,
    );
  const [sessionId = ""] = sessions;
  return {
    sessionId,
    entries: split.map(({ entry, named }) =>
      named === undefined ? entry : { ...entry, interruptId: named.interruptId },
    ),
  };
}

/**
 * The 409 of a fresh run whose session exists but the caller may not write: the same words
 * whatever that session is doing (idle, running, waiting on interrupts) and whoever holds it.
 */
function unavailable(input: RunAgentInput, model: AguiSessionModel): SparError {
  const [kind, id] = model === "per_run" ? ["runId", input.runId] : ["threadId", input.threadId];
  return new SparError(
    "conflict",
    `${kind} ${JSON.stringify(id)} names a session this caller cannot run on: start the run with another ${kind}`,
  );
}

/** A resume entry as POST /resume's answer; 409 when it names no open interrupt, 400 when it answers nothing. */
function answerFor(entry: ResumeEntry, open: ReadonlyMap<string, QuestionKind>, sessionId: string): Answer {
  const kind = open.get(entry.interruptId);
  if (kind === undefined)
    throw new SparError(
      "conflict",
      `no open interrupt ${JSON.stringify(entry.interruptId)} on session ${JSON.stringify(sessionId)}`,
      { interrupts: [...open.keys()] },
    );
  if (entry.status === "cancelled")
    return {
      interruptId: entry.interruptId,
      response:
        kind === "result" ? { approved: false, note: CANCELLED_NOTE } : { verdict: "reject", note: CANCELLED_NOTE },
    };
  const payload = entry.payload;
  if (kind === "write-gate") {
    const parsed = v.safeParse(VerdictPayload, payload);
    if (!parsed.success || !VERDICTS.has(parsed.output.verdict))
      throw new SparError(
        "bad_request",
        `resume payload for ${entry.interruptId} must be a verdict {verdict: approve | reject | edit, scope?, args?, note?}`,
      );
  } else if (payload !== true && !(isRecord(payload) && typeof payload.approved === "boolean")) {
    throw new SparError("bad_request", `resume payload for ${entry.interruptId} must be {approved: boolean, note?}`);
  }
  return { interruptId: entry.interruptId, response: payload };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** RUN_ERROR's message and code: `aborted` for a session aborted or gate-paused (409), else `internal`. */
function runError(error: unknown): { message: string; code: RunErrorCode } {
  const message = error instanceof Error ? error.message : String(error);
  return { message, code: error instanceof SparError && error.code === "conflict" ? "aborted" : "internal" };
}
