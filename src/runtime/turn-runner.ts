/**
 * One turn of a session on the main thread: hands the conversation to a turn worker, answers
 * its requests (commit a response, run a tool call, script cursor) with every row committed
 * before the worker goes on, applies the guardrails to each response and tool call, and
 * publishes the turn's end in the order of docs/attach-api.md#frame-order (rows, terminal frame,
 * idle, usage).
 */
import { recordModelCallTokens, recordTurn } from "../telemetry/turn-metrics.ts";
import type {
  CommittedRow,
  EventHeader,
  LiveFrame,
  MessagePart,
  ModelResponseEvent,
  SessionEvent,
  ToolCall,
  ToolResultEvent,
} from "../core/events.ts";
import type { ChatMessage } from "../core/model.ts";
import { CANCELED_TURN, classifyTurnFailure, deadlineTurn } from "../core/turn-errors.ts";
import {
  ASSUMED_WINDOW_TOKENS,
  CONTEXT_REDUCTION_AUTHOR,
  contextDegradedMetadata,
  conversationChars,
  messageChars,
} from "../core/compaction.ts";
import { type UsageLedger, priceUsage } from "../core/usage.ts";
import type { ActorContext } from "./actor-types.ts";
import type { ToolRunResult } from "../core/tool-catalog.ts";
import type { ResponseDraft, TurnOutcome, WorkerRequest } from "./channel.ts";
import type { CancelCause, ExecutionEnd } from "./executor.ts";
import type { TurnTools } from "./gated-tools.ts";
import { TurnUsageAccumulator, countDigest } from "./history.ts";
import { digestToolResult } from "./tool-digest.ts";
import type { DigestRecord } from "../core/digest.ts";
import type { Journal } from "./session-journal.ts";
import type { SessionGuards, TurnGuardState } from "./session-guards.ts";
import type { RunningTurn, TurnOffer } from "./worker-pool.ts";
import type { TraceCarrier } from "../core/session-store.ts";
import type { TurnTrace } from "../telemetry/turn-trace.ts";

export interface TurnDeps {
  context: ActorContext;
  conversationKey: string;
  history: ChatMessage[];
  ledger: UsageLedger;
  tools: TurnTools;
  guards: SessionGuards;
  journal: Journal;
  /** The tools and system prompt this turn offers the model; absent: the pool's (the agent's). */
  offer?: () => TurnOffer;
  /** The author of the turn's rows; absent: the daemon's agent name. */
  author?: string;
  /** The turn's spans (tracing on only, D301). */
  trace?: TurnTrace;
}

export const TURN_ERROR_AUTHOR = "agent/turn-error";
export const REPAIR_AUTHOR = "agent/repair";

/**
 * Results for tool calls a cut turn left without one (restart, interrupt, crash): error results
 * saying the call was not run again, so the conversation the model sees is well formed.
 */
export function repairRows(calls: readonly ToolCall[], header: () => EventHeader): ToolResultEvent[] {
  return calls.map((call) => ({
    ...header(),
    kind: "tool-result",
    callId: call.callId,
    name: call.name,
    output: {
      error:
        "this tool call was cut off before it returned a result (restart, interrupt or crash): it was stopped, may have done part of its work, and was not run again",
      repaired: true,
    },
    isError: true,
    latencyMs: 0,
  }));
}

export class Turn {
  readonly invocationId: string;
  readonly promptId: string;
  readonly guard: TurnGuardState;
  readonly #deps: TurnDeps;
  readonly #startedAt = performance.now();
  readonly #usage = new TurnUsageAccumulator();
  /** The conversation's size in characters, counted once at the first tool result, then kept up. */
  #contextChars: number | undefined;
  #running: RunningTurn | undefined;
  #cancelCause: CancelCause | undefined;
  #finishReason: string | undefined;

  constructor(deps: TurnDeps, invocationId: string, promptId: string) {
    this.#deps = deps;
    this.invocationId = invocationId;
    this.promptId = promptId;
    this.guard = deps.guards.beginTurn(invocationId);
  }

  get canceled(): boolean {
    return this.#cancelCause !== undefined;
  }

  /** Stop the worker; prompts this turn waits on close (410 turn-ended). First cause wins. */
  cancel(cause: CancelCause): void {
    this.#cancelCause ??= cause;
    this.#running?.cancel();
    this.#deps.tools
      .endTurn(this.invocationId)
      .catch((error: unknown) => this.#deps.context.logError(`closing prompts: ${String(error)}`));
  }

  async execute(): Promise<TurnOutcome> {
    const context = this.#deps.context;
    if (this.canceled || context.isShuttingDown()) return { status: "canceled" };
    // Tool servers start on first use: the model must be offered their tools on this turn.
    await context.prepareTools().catch((error: unknown) => context.logError(`tool servers: ${String(error)}`));
    if (this.canceled || context.isShuttingDown()) return { status: "canceled" };
    this.#running = context.pool.runTurn(
      {
        turnId: this.invocationId,
        model: context.model,
        conversationKey: this.#deps.conversationKey,
        conversation: this.#deps.history,
        maxSteps: context.maxSteps,
        ...(this.#deps.offer ? { offer: this.#deps.offer() } : {}),
        ...this.#traceField(),
      },
      {
        onPart: (messageId, part) => this.#deps.journal.frame(partFrame(this.invocationId, messageId, part)),
        // The turn's rows commit under its span (the store's commit spans are its children).
        onRequest: (request) =>
          this.#deps.trace?.within(() => this.#answerWorker(request)) ?? this.#answerWorker(request),
      },
    );
    if (this.canceled) this.#running.cancel();
    return this.#running.outcome;
  }

  #answerWorker(request: WorkerRequest): Promise<unknown> {
    switch (request.kind) {
      case "commit-response":
        return this.#commitResponse(request.draft);
      case "run-tool":
        return this.#runTool(request.call);
      case "script-cursor":
        return Promise.resolve({ index: this.#deps.context.nextScriptIndex() });
    }
  }

  #traceField(): { trace?: TraceCarrier } {
    const trace = this.#deps.trace?.carrier();
    return trace === undefined ? {} : { trace };
  }

  async #commitResponse(draft: ResponseDraft): Promise<{ ok: true }> {
    const context = this.#deps.context;
    const model = context.model.name;
    const event: ModelResponseEvent = {
      ...this.#deps.journal.header(this.invocationId, this.#deps.author ?? context.agentName),
      // The row completes the message its parts streamed under (D296).
      id: draft.messageId,
      kind: "model-response",
      model,
      text: draft.text,
      toolCalls: draft.toolCalls,
      turnComplete: draft.turnComplete,
      finishReason: draft.finishReason,
      usage: draft.usage,
      cost: priceUsage(draft.usage, context.pricing.rates(model)),
    };
    await this.#deps.journal.append([event]);
    if (draft.call !== undefined) this.#deps.trace?.modelCall(draft.call, context.model, { ...draft, model });
    recordModelCallTokens(draft.usage, context.model.provider, model);
    this.#usage.add(event);
    this.#finishReason = draft.finishReason;
    const answer: ChatMessage = { role: "assistant", text: event.text, toolCalls: event.toolCalls };
    this.#deps.history.push(answer);
    if (this.#contextChars !== undefined) this.#contextChars += messageChars(answer);
    const turnCost = this.#usage.cost.costUsd;
    const cut = await this.#deps.guards.observeSpend(
      this.guard,
      turnCost,
      this.#deps.ledger.sessionCostUsd + turnCost,
      draft.toolCalls.length === 0,
    );
    if (cut) this.cancel("guardrail");
    return { ok: true };
  }

  /**
   * A proposed tool call: the watchdog sees it first, then the permission gate; its result is
   * committed. A watchdog halt or a refusal storm cuts the turn (`canceled`).
   */
  async #runTool(call: ToolCall): Promise<ToolRunResult> {
    const halt = this.canceled ? undefined : await this.#deps.guards.observeToolCall(this.guard, call);
    let result: ToolRunResult;
    let storm: number | undefined;
    let rows: SessionEvent[] = [];
    let committed: ((rows: CommittedRow[]) => void) | undefined;
    let latencyMs = 0;
    let digest: DigestRecord | undefined;
    if (halt || this.canceled) {
      result = {
        output: {
          error: "not run: the turn was stopped before this call (see the session's guardrail and interrupt rows)",
        },
        isError: true,
      };
    } else {
      const started = performance.now();
      const run = () => this.#deps.tools.run(call, this.invocationId);
      const verdict = await (this.#deps.trace?.toolCall(call, run, (answer) => ({
        isError: answer.result.isError,
        ...(answer.permission === undefined ? {} : { permission: answer.permission }),
      })) ?? run());
      latencyMs = Math.round(performance.now() - started);
      result = verdict.result;
      // What the model reads of a large result: its digest (D352); the row keeps the raw (D354).
      const digested = await this.#digest(call, result);
      if (digested) {
        result = { ...result, output: digested.output };
        digest = digested.record;
      }
      storm = verdict.storm;
      rows = verdict.rows ?? [];
      committed = verdict.committed;
    }
    const event: ToolResultEvent = {
      ...this.#deps.journal.header(this.invocationId, this.#deps.author ?? this.#deps.context.agentName),
      kind: "tool-result",
      callId: call.callId,
      name: call.name,
      output: result.output,
      isError: result.isError,
      latencyMs,
      ...(digest === undefined ? {} : { digest }),
    };
    const written = await this.#deps.journal.append([...rows, event]);
    committed?.(written);
    if (digest) this.#countDigest(digest);
    this.#deps.history.push({
      role: "tool",
      callId: call.callId,
      name: call.name,
      output: result.output,
      isError: result.isError,
    });
    await this.#cutPastWindow();
    if (halt) {
      await this.#deps.guards.recordCut(this.guard, halt);
      this.cancel("guardrail");
    }
    if (storm !== undefined) {
      await this.#deps.journal.append([
        {
          ...this.#deps.journal.header(this.invocationId, "gate/refusal-storm"),
          kind: "audit",
          name: "refusal-storm",
          metadata: { suppressed_calls: storm },
        },
      ]);
      this.cancel("refusal-storm");
    }
    return result;
  }

  #digest(call: ToolCall, result: ToolRunResult) {
    const context = this.#deps.context;
    return context.digest === undefined ? undefined : digestToolResult(context.digest, context, call, result);
  }

  /** A committed digest into the session's counters; an agentic summary's cost into its usage (D355). */
  #countDigest(digest: DigestRecord): void {
    countDigest(this.#deps.ledger, digest);
    if (digest.subagent) this.#deps.journal.frame({ type: "usage-update", ...this.#deps.ledger.toUsageUpdate() });
  }

  /**
   * A tool result took the conversation past the model's context window: the next request would
   * not fit, so the turn ends `canceled` now, once, with a `context-reduction-degraded` row
   * (`turn-cut`); the compaction after the turn is pending (D372).
   */
  async #cutPastWindow(): Promise<void> {
    const history = this.#deps.history;
    const last = history[history.length - 1];
    this.#contextChars =
      this.#contextChars === undefined
        ? conversationChars(history)
        : this.#contextChars + (last === undefined ? 0 : messageChars(last));
    const context = this.#deps.context;
    const window = context.model.contextWindowTokens ?? ASSUMED_WINDOW_TOKENS;
    if (this.canceled || Math.ceil(this.#contextChars / 4) < window) return;
    const tokens = Math.ceil(this.#contextChars / 4);
    const detail = `a tool result took the conversation to about ${tokens} tokens, past the ${window}-token context window: the turn was cut and the conversation is compacted before the next one`;
    await this.#deps.journal
      .append([
        {
          ...this.#deps.journal.header(this.invocationId, CONTEXT_REDUCTION_AUTHOR),
          kind: "audit",
          name: "context-reduction-degraded",
          metadata: contextDegradedMetadata("turn-cut", detail),
        },
      ])
      .catch((error: unknown) => context.logError(`turn-cut row not written: ${String(error)}`));
    this.cancel("context-window");
  }

  /**
   * Record the turn's end: usage into the ledger, a durable `agent/turn-error` row for a
   * failure, then the terminal frame, idle, and cumulative usage, in that order.
   */
  async finish(outcome: TurnOutcome): Promise<ExecutionEnd> {
    const deps = this.#deps;
    this.#usage.recordInto(deps.ledger);
    deps.guards.endTurn(this.guard, this.#usage.calls > 0);
    const status = this.canceled ? "canceled" : outcome.status;
    deps.context.turnEnded(status);
    const end: ExecutionEnd = { status };
    if (this.#finishReason !== undefined) end.finishReason = this.#finishReason;
    if (this.#cancelCause !== undefined) end.cancelCause = this.#cancelCause;
    const frames: LiveFrame[] = [];
    if (status === "completed") {
      frames.push({
        type: "turn-complete",
        promptId: this.promptId,
        model: deps.context.model.name,
        inputTokens: this.#usage.usage.inputTokens,
        outputTokens: this.#usage.usage.outputTokens,
        costUsd: this.#usage.cost.costUsd,
        latencyMs: Math.round(performance.now() - this.#startedAt),
      });
    } else if (this.#cancelCause === "deadline") {
      end.error = deadlineTurn(deps.context.turnDeadlineMs);
      frames.push({ type: "turn-error", ...end.error });
    } else if (status === "canceled" || outcome.status !== "failed") {
      frames.push({ type: "turn-error", ...CANCELED_TURN });
    } else {
      end.error = classifyTurnFailure(outcome.message, outcome.code);
      await deps.journal
        .append([
          {
            ...deps.journal.header(this.invocationId, TURN_ERROR_AUTHOR),
            kind: "audit",
            name: "turn-error",
            metadata: { source: "agent", ...end.error },
          },
        ])
        .catch((error: unknown) => deps.context.logError(`turn-error row not written: ${String(error)}`));
      frames.push({ type: "turn-error", ...end.error });
    }
    frames.push({ type: "status-update", turnState: "idle" });
    frames.push({ type: "usage-update", ...deps.ledger.toUsageUpdate() });
    for (const frame of frames) deps.journal.frame(frame);
    recordTurn((performance.now() - this.#startedAt) / 1000, deps.author ?? deps.context.agentName, status);
    deps.trace?.end({
      status,
      usage: this.#usage.usage,
      costUsd: this.#usage.cost.costUsd,
      ...(end.error === undefined ? {} : { error: end.error.message }),
      ...(outcome.status !== "completed" && outcome.modelCall !== undefined
        ? { openCall: { call: outcome.modelCall, model: deps.context.model } }
        : {}),
    });
    return end;
  }
}

/** The live frame of a streamed part: text as a text delta, a boundary as a message part. */
function partFrame(invocationId: string, messageId: string, part: MessagePart): LiveFrame {
  return part.kind === "text-delta"
    ? { type: "text-delta", invocationId, messageId, text: part.text }
    : { type: "message-part", invocationId, messageId, part };
}
