/**
 * SubagentRun: one subagent instance's turns (D351). Each turn is the runtime's Turn on the turn
 * worker pool, as any session's: the instance's conversation and usage ledger are its own, its rows
 * go to the parent session's log under its branch label, its tool calls pass the tools it is
 * granted and then the parent session's permission gate (prompts on the parent's /perms/stream),
 * and the parent's guardrails watch it. Its live frames stay off the parent's stream (a subagent's
 * turn-complete is not the parent's). One turn at a time; cancel stops the one in flight.
 */
import type { EventHeader, LiveFrame, SessionEvent, UserMessageEvent } from "../core/events.ts";
import { uuidv7 } from "../core/ids.ts";
import type { ChatMessage, ToolSpec } from "../core/model.ts";
import { type SubagentSpec, grants } from "../core/subagents.ts";
import { UsageLedger } from "../core/usage.ts";
import type { ActorContext } from "./actor-types.ts";
import type { CancelCause, ExecutionEnd } from "./executor.ts";
import type { ToolVerdict, TurnTools } from "./gated-tools.ts";
import { eventToMessage, missingToolResults } from "./history.ts";
import type { Journal } from "./session-journal.ts";
import type { SessionGuards } from "./session-guards.ts";
import { REPAIR_AUTHOR, Turn, repairRows } from "./turn-runner.ts";

export interface SubagentRunDeps {
  spec: SubagentSpec;
  label: string;
  context: ActorContext;
  /** The parent session's journal: the instance's rows are committed there, stamped with its label. */
  journal: Journal;
  guards: SessionGuards;
  /** The parent session's tools (its permission gate) behind the grant. */
  tools: TurnTools;
  /** The tools the daemon offers (the grant picks from them). */
  offered(): ToolSpec[];
  /** The instance's rows committed before (a cut instance carried on); empty for a new one. */
  history?: readonly SessionEvent[];
}

/** How one instance turn ended, with the instance's last answer. */
export interface SubagentTurnEnd {
  end: ExecutionEnd;
  text: string;
}

export class SubagentRun {
  readonly #deps: SubagentRunDeps;
  readonly #journal: Journal;
  readonly #history: ChatMessage[] = [];
  readonly ledger = new UsageLedger();
  readonly #conversationKey = `sub-${uuidv7()}`;
  readonly #context: ActorContext;
  #turn: Turn | undefined;

  constructor(deps: SubagentRunDeps) {
    this.#deps = deps;
    this.#journal = branchJournal(deps.journal, deps.label);
    this.#context = deps.spec.model === undefined ? deps.context : { ...deps.context, model: deps.spec.model };
    for (const event of deps.history ?? []) {
      const message = eventToMessage(event);
      if (message) this.#history.push(message);
    }
  }

  /** Run one turn on `prompt` (author `author`); resolves when it has ended. */
  async turn(prompt: string, author = "user"): Promise<SubagentTurnEnd> {
    const invocationId = `e-${uuidv7()}`;
    const { spec } = this.#deps;
    const turn = new Turn(
      {
        context: this.#context,
        conversationKey: this.#conversationKey,
        history: this.#history,
        ledger: this.ledger,
        tools: new GrantedTools(spec, this.#deps.tools),
        guards: this.#deps.guards,
        journal: this.#journal,
        offer: () => ({
          tools: this.#deps.offered().filter((tool) => grants(spec, tool.name)),
          system: spec.instructions,
        }),
        author: spec.name,
      },
      invocationId,
      uuidv7(),
    );
    this.#turn = turn;
    const header = () => this.#journal.header(invocationId, REPAIR_AUTHOR);
    const repairs = repairRows(missingToolResults(this.#history), header);
    const opening: UserMessageEvent = {
      ...this.#journal.header(invocationId, author),
      kind: "user-message",
      text: prompt,
      promptIds: [],
    };
    try {
      await this.#journal.append([...repairs, opening]);
    } catch (error) {
      return {
        end: { status: "failed", error: { kind: "unknown", message: String(error), retryable: false } },
        text: "",
      };
    }
    for (const repair of repairs) {
      const message = eventToMessage(repair);
      if (message) this.#history.push(message);
    }
    this.#history.push({ role: "user", text: prompt });
    const end = await turn.finish(await turn.execute());
    await this.#deps.tools.endTurn(invocationId).catch(() => undefined);
    this.#context.pool.forget(this.#conversationKey);
    return { end, text: lastAnswer(this.#history) };
  }

  /** Stop the turn in flight (its end still comes through `turn`). */
  cancel(cause: CancelCause): void {
    this.#turn?.cancel(cause);
  }
}

/**
 * The tools an instance may call: a call its roster entry does not grant is refused without
 * asking anyone (the model is told so); the rest pass the parent session's tools (its gate).
 */
export class GrantedTools implements TurnTools {
  readonly #spec: SubagentSpec;
  readonly #inner: TurnTools;

  constructor(spec: SubagentSpec, inner: TurnTools) {
    this.#spec = spec;
    this.#inner = inner;
  }

  run(call: { callId: string; name: string; args: Record<string, unknown> }, turnId: string): Promise<ToolVerdict> {
    if (!grants(this.#spec, call.name))
      return Promise.resolve({
        result: {
          output: { error: `tool ${JSON.stringify(call.name)} is not granted to subagent ${this.#spec.name}` },
          isError: true,
        },
        permission: "not-granted",
      });
    return this.#inner.run(call, turnId);
  }

  endTurn(turnId: string): Promise<void> {
    return this.#inner.endTurn(turnId);
  }
}

/** The parent's journal as an instance writes through it: its label on every row, its frames dropped. */
function branchJournal(journal: Journal, label: string): Journal {
  return {
    header: (invocationId: string, author: string): EventHeader => ({
      ...journal.header(invocationId, author),
      branch: label,
    }),
    append: (events, drained, before) => journal.append(events, drained, before),
    frame: (_frame: LiveFrame) => {},
  };
}

function lastAnswer(history: readonly ChatMessage[]): string {
  for (let index = history.length - 1; index >= 0; index--) {
    const message = history[index];
    if (message?.role === "user") return "";
    if (message?.role === "assistant" && message.text !== "") return message.text;
  }
  return "";
}
