/**
 * TurnExecutor: the agent's model turn as an Executor, the first implementation of the seam.
 * Opens the turn (the drained inbox bundled into the prompt row, after rows repairing tool calls
 * a cut turn left without a result, in one transaction that drains the inbox), runs it on a turn
 * worker (Turn), closes its permission prompts, and publishes its end. Holds the latest Turn so a
 * cancel reaches it; it never decides when a turn runs (the scheduler does).
 */
import type { CancelCause, Execution, ExecutionEnd, Executor, ExecutorSession } from "./executor.ts";
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

export class TurnExecutor implements Executor {
  readonly #session: ExecutorSession;
  readonly #tools: TurnTools;
  readonly #offer: (() => TurnOffer) | undefined;
  readonly #author: string | undefined;
  /** The latest turn; a cancel after its end changes nothing, as before it was replaced. */
  #turn: Turn | undefined;

  constructor(session: ExecutorSession, shape: TurnShape = {}) {
    this.#session = session;
    this.#tools = shape.tools ?? session.tools;
    this.#offer = shape.offer;
    this.#author = shape.author;
  }

  async execute(execution: Execution): Promise<ExecutionEnd | undefined> {
    return this.#execute(execution, true);
  }

  /**
   * Open the execution (drain its items into the prompt row) and end it without asking the model:
   * a wake that brought nothing new for the model to read (svc's resume after nothing changed).
   */
  executeWithoutModel(execution: Execution): Promise<ExecutionEnd | undefined> {
    return this.#execute(execution, false);
  }

  async #execute(execution: Execution, askModel: boolean): Promise<ExecutionEnd | undefined> {
    const session = this.#session;
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
      },
      execution.invocationId,
      execution.promptId,
    );
    this.#turn = turn;
    if (!(await this.#open(execution))) return undefined;
    const outcome = askModel ? await turn.execute() : { status: "completed" as const };
    await this.#tools
      .endTurn(turn.invocationId)
      .catch((error: unknown) =>
        session.context.logError(`session ${session.key.id}: closing prompts: ${String(error)}`),
      );
    return turn.finish(outcome);
  }

  cancel(invocationId: string, cause: CancelCause): void {
    if (this.#turn?.invocationId === invocationId) this.#turn.cancel(cause);
  }

  /** Commit the turn's opening rows (draining its inbox items), then add them to the conversation. */
  async #open(execution: Execution): Promise<boolean> {
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
      return false;
    }
    conversation.history.push(...opening.messages);
    execution.started(opening.human);
    return true;
  }
}

/** The default ExecutorFactory: every session runs model turns. */
export function turnExecutor(session: ExecutorSession): Executor {
  return new TurnExecutor(session);
}
