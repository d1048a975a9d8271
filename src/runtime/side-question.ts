/**
 * `POST /slash/btw` (D357): a side question to the session's model. One bare call (no tools, no
 * system prompt) on a turn worker over a read-only copy of the conversation, the operator's
 * question last, prefixed by a status preamble (state, model, turn count, session cost, inbox
 * depth, running subagents). Persists nothing: no row, nothing added to the conversation, and a
 * turn in flight runs on untouched. Its usage counts in the session's live totals (not as a
 * turn, not in the log).
 */
import { SparError } from "../core/errors.ts";
import type { ChatMessage } from "../core/model.ts";
import { type UsageLedger, priceUsage } from "../core/usage.ts";
import type { ActorContext, StatusInfo, SubagentRef } from "./actor-types.ts";
import { bareCall } from "./bare-call.ts";
import { missingToolResults } from "./history.ts";
import type { Journal } from "./session-journal.ts";

export type SideAnswer = { answer: string } | { empty: true; detail?: string };

export interface SideQuestionDeps {
  context: Pick<ActorContext, "pool" | "model" | "nextScriptIndex" | "pricing">;
  /** The live conversation; only copied. */
  history: readonly ChatMessage[];
  ledger: UsageLedger;
  journal: Pick<Journal, "frame">;
  status(): StatusInfo;
  inboxDepth(): number;
  /** Subagents running for the session (none until subagents are wired). */
  runningSubagents(): readonly SubagentRef[];
}

/** The status lines the model reads before the question. */
export function statusPreamble(deps: SideQuestionDeps): string {
  const subagents = deps.runningSubagents();
  const names = subagents.map((agent) => (agent.id === undefined ? agent.name : `${agent.name} (${agent.id})`));
  return [
    "[Session status, for a side question from the operator]",
    `state: ${deps.status().state}`,
    `model: ${deps.context.model.name}`,
    `turns: ${deps.ledger.turns}`,
    `session cost: ${deps.ledger.sessionCostUsd.toFixed(4)} USD`,
    `inbox: ${deps.inboxDepth()} waiting`,
    `running subagents: ${names.length === 0 ? "none" : names.join(", ")}`,
    "[Answer the question below from the conversation above. It is an aside: it starts no work, and neither it nor your answer is kept in the conversation.]",
  ].join("\n");
}

/**
 * The copy the call sends: the conversation as it stands (a turn in flight may have proposed
 * calls whose results are not in yet: each gets a placeholder result, so the copy is one every
 * provider accepts), then the preamble and the question.
 */
function asideConversation(deps: SideQuestionDeps, question: string): ChatMessage[] {
  const copy = [...deps.history];
  for (const call of missingToolResults(copy)) {
    copy.push({
      role: "tool",
      callId: call.callId,
      name: call.name,
      output: { note: "this call is still running; its result is not in yet" },
      isError: false,
    });
  }
  copy.push({ role: "user", text: `${statusPreamble(deps)}\n\n${question}` });
  return copy;
}

/** Ask; 500 when the model call fails, 503 when the daemon stopping cancels it. */
export async function askAside(deps: SideQuestionDeps, question: string): Promise<SideAnswer> {
  const outcome = await bareCall(deps.context, asideConversation(deps, question), "btw").outcome;
  if (outcome.status === "failed") throw new SparError("model_failed", `the model call failed: ${outcome.message}`);
  if (outcome.status === "canceled")
    throw new SparError("shutting_down", "the side question was canceled: the daemon is stopping");
  if (outcome.usage !== undefined) {
    const model = deps.context.model.name;
    deps.ledger.recordExtra(model, outcome.usage, priceUsage(outcome.usage, deps.context.pricing.rates(model)));
    deps.journal.frame({ type: "usage-update", ...deps.ledger.toUsageUpdate() });
  }
  if (outcome.status === "answered" && outcome.text !== "") return { answer: outcome.text };
  const reason = outcome.finishReason;
  if (outcome.status === "answered")
    return { empty: true, detail: "the model asked for tools; a side question offers none" };
  return reason === "" || reason === "stop" ? { empty: true } : { empty: true, detail: `finish reason: ${reason}` };
}
