/**
 * One model call outside any turn, on a turn worker: no tools, no system prompt, one step, over a
 * conversation of its own (a compaction or checkpoint summary, a `/slash/btw` answer). The
 * conversation goes to the worker under a throwaway cache key that is forgotten afterwards;
 * nothing is committed and nothing is published. Cancelable (shutdown, delete).
 */
import { uuidv7 } from "../core/ids.ts";
import type { ChatMessage } from "../core/model.ts";
import type { TokenUsage } from "../core/usage.ts";
import type { ActorContext } from "./actor-types.ts";
import type { ResponseDraft, WorkerRequest } from "./channel.ts";

export type BareOutcome =
  | { status: "answered"; text: string; toolCalls: number; finishReason: string; usage: TokenUsage }
  /** The model's response had no text and no tool calls (`finishReason` says why, when it does). */
  | { status: "empty"; finishReason: string; usage: TokenUsage | undefined }
  | { status: "failed"; message: string }
  | { status: "canceled" };

export interface BareCall {
  readonly outcome: Promise<BareOutcome>;
  cancel(): void;
}

/** Start the call; `label` prefixes its ids (`compact`, `checkpoint`, `btw`). */
export function bareCall(
  context: Pick<ActorContext, "pool" | "model" | "nextScriptIndex">,
  conversation: ChatMessage[],
  label: string,
): BareCall {
  let draft: ResponseDraft | undefined;
  const conversationKey = `${label}-${uuidv7()}`;
  const running = context.pool.runTurn(
    { turnId: `${label}-${uuidv7()}`, model: context.model, conversationKey, conversation, maxSteps: 1, bare: true },
    {
      onPart: () => {},
      onRequest: (request: WorkerRequest) => {
        switch (request.kind) {
          case "commit-response":
            draft = request.draft;
            return Promise.resolve({ ok: true });
          case "run-tool":
            return Promise.resolve({ output: { error: `no tools run in a ${label} call` }, isError: true });
          case "script-cursor":
            return Promise.resolve({ index: context.nextScriptIndex() });
        }
      },
    },
  );
  const outcome = running.outcome.then((ended): BareOutcome => {
    context.pool.forget(conversationKey);
    if (ended.status === "failed") return { status: "failed", message: ended.message };
    if (ended.status === "canceled") return { status: "canceled" };
    const text = draft?.text.trim() ?? "";
    if (!draft || (text === "" && draft.toolCalls.length === 0))
      return { status: "empty", finishReason: draft?.finishReason ?? "", usage: draft?.usage };
    return {
      status: "answered",
      text,
      toolCalls: draft.toolCalls.length,
      finishReason: draft.finishReason,
      usage: draft.usage,
    };
  });
  return { outcome, cancel: () => running.cancel() };
}
