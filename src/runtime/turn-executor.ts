/**
 * TurnExecutor: the agent's model turn as an Executor, the first implementation of the seam.
 * Opens the turn (the drained inbox bundled into the prompt row, after rows repairing tool calls
 * a cut turn left without a result, in one transaction that drains the inbox), runs it on a turn
 * worker (Turn), closes its permission prompts, and publishes its end. Holds the latest Turn so a
 * cancel reaches it; it never decides when a turn runs (the scheduler does).
 */
import { ZERO_USAGE } from "../core/usage.ts";
import { TurnTrace } from "../telemetry/turn-trace.ts";
import type { CancelCause, Execution, ExecutionEnd, Executor, ExecutorSession } from "./executor.ts";
import type { TurnOutcome } from "./channel.ts";
import type { TurnTools } from "./gated-tools.ts";
import { Turn } from "./turn-runner.ts";
import type { TurnOffer } from "./worker-pool.ts";

/** What a workload changes about its sessions' turns: the tools in front of the gate, and the offer. */
export interface TurnShape {
  /** Answers the turn's tool calls instead of the session's GatedTools (which it may wrap). */
  tools?: TurnTools;
  /** The tools and system prompt offered to the model instead of the agent's. */
  offer?: () => TurnOffer;
  /** The agent whose turns these are (the rows' author) instead of the daemon's agent. */
  author?: string;
}
import { turnStartRows } from "./turn-start-rows.ts";
import { SubagentCallTools } from "./subagent-tools.ts";
import { LoopControlTools } from "./loop-control-tools.ts";
import { TriageTools } from "./triage-tools.ts";

export class TurnExecutor implements Executor {
  readonly #session: ExecutorSession;
  readonly #tools: TurnTools;
  readonly #offer: (() => TurnOffer) | undefined;
  readonly #author: string | undefined;
  /** The latest turn; a cancel after its end changes nothing, as before it was replaced. */
  #turn: Turn | undefined;
  /** Aborted when the latest turn is cancelled: the signal of work run in place of the model. */
  #work: AbortController | undefined;

  constructor(session: ExecutorSession, shape: TurnShape = {}) {
    this.#session = session;
    this.#tools = shape.tools ?? withTriage(session, withLoopControl(session, withSubagentCalls(session)));
    this.#offer = shape.offer;
    this.#author = shape.author;
  }

  async execute(execution: Execution): Promise<ExecutionEnd | undefined> {
    return this.#execute(execution, (turn) => turn.execute());
  }

  /**
   * Open the execution (drain its items into the prompt row) and end it without asking the model:
   * a wake that brought nothing new for the model to read (svc's resume after nothing changed).
   */
  executeWithoutModel(execution: Execution): Promise<ExecutionEnd | undefined> {
    return this.#execute(execution, () => Promise.resolve({ status: "completed" }));
  }

  /**
   * Open the execution, run `work` in place of the model (a workload's dispatch: it records its
   * own rows through the journal) with the bundled human text and a signal aborted on cancel,
   * and publish its end as a turn's. `work` should resolve, not reject; a rejection is a failure.
   */
  executeWork(
    execution: Execution,
    work: (human: string, signal: AbortSignal) => Promise<TurnOutcome>,
  ): Promise<ExecutionEnd | undefined> {
    const controller = new AbortController();
    this.#work = controller;
    return this.#execute(execution, (_turn, human) =>
      work(human, controller.signal).catch((error: unknown) => ({
        status: "failed" as const,
        message: error instanceof Error ? error.message : String(error),
      })),
    );
  }

  async #execute(
    execution: Execution,
    run: (turn: Turn, human: string) => Promise<TurnOutcome>,
  ): Promise<ExecutionEnd | undefined> {
    const session = this.#session;
    const trace = TurnTrace.start({
      sessionId: session.key.id,
      app: session.key.app,
      agent: this.#author ?? session.context.agentName,
      invocationId: execution.invocationId,
      promptId: execution.promptId,
      kind: execution.armed ? "continue" : execution.items.length > 0 ? "prompt" : "wake",
      prompts: execution.items.map((item) => item.trace),
    });
    const turn = new Turn(
      {
        context: session.context,
        conversationKey: session.conversation.key,
        history: session.conversation.history,
        ledger: session.conversation.ledger,
        tools: this.#tools,
        guards: session.guards,
        journal: session.journal,
        ...(this.#offer ? { offer: this.#offer } : {}),
        ...(this.#author === undefined ? {} : { author: this.#author }),
        ...(trace === undefined ? {} : { trace }),
      },
      execution.invocationId,
      execution.promptId,
    );
    this.#turn = turn;
    const human = await (trace?.within(() => this.#open(execution)) ?? this.#open(execution));
    if (human === undefined) {
      trace?.end({ status: "refused", usage: ZERO_USAGE, costUsd: 0, error: "the turn's opening rows were refused" });
      return undefined;
    }
    const outcome = await run(turn, human);
    await this.#tools
      .endTurn(turn.invocationId)
      .catch((error: unknown) =>
        session.context.logError(`session ${session.key.id}: closing prompts: ${String(error)}`),
      );
    return turn.finish(outcome);
  }

  cancel(invocationId: string, cause: CancelCause): void {
    if (this.#turn?.invocationId !== invocationId) return;
    this.#turn.cancel(cause);
    this.#work?.abort();
  }

  /**
   * Commit the turn's opening rows (draining its inbox items), then add them to the conversation.
   * Resolves with the bundled human text; undefined when the write was refused.
   */
  async #open(execution: Execution): Promise<string | undefined> {
    const { context, conversation, guards, journal } = this.#session;
    const opening = turnStartRows({
      invocationId: execution.invocationId,
      items: execution.items,
      armed: execution.armed,
      history: conversation.history,
      modelName: context.model.name,
      framePrompt: (text) => guards.framePrompt(text),
      header: (invocationId, author) => journal.header(invocationId, author),
    });
    try {
      await journal.append(opening.events, opening.drainedPromptIds, opening.before);
    } catch (error) {
      execution.refused(error);
      return undefined;
    }
    conversation.history.push(...opening.messages);
    execution.started(opening.human);
    return opening.human;
  }
}

/** The session's tools, with its parent-tool subagents answered in front of the gate when it has any (D351). */
function withSubagentCalls(session: ExecutorSession): TurnTools {
  return session.subagents.roster.some((spec) => spec.parentTool)
    ? new SubagentCallTools(session.tools, session.subagents)
    : session.tools;
}

/** The session's tools with the loop-control calls answered in front of them when its daemon offers them (D362). */
function withLoopControl(session: ExecutorSession, tools: TurnTools): TurnTools {
  const loop = session.loop;
  if (loop === undefined) return tools;
  return new LoopControlTools(tools, { journal: session.journal, now: () => session.context.now(), loop });
}

/** The session's tools with record_plan and wait_and_verify answered in front of them when configured (D465-D467). */
function withTriage(session: ExecutorSession, tools: TurnTools): TurnTools {
  const settings = session.context.permissions.triage;
  if (settings === undefined || (!settings.requirePlan && settings.waitAndVerify === undefined)) return tools;
  return new TriageTools(tools, {
    sessionId: session.key.id,
    settings,
    journal: session.journal,
    plans: session.context.plans,
    gate: session.tools,
  });
}

/** The default ExecutorFactory: every session runs model turns. */
export function turnExecutor(session: ExecutorSession): Executor {
  return new TurnExecutor(session);
}
