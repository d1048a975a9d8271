/**
 * Turn worker entrypoint: answers `run-turn` requests by building the model and running the turn
 * loop, over the turn channel of src/runtime/channel.ts (the RPC layer carries ids, cancels,
 * the handshake and pings). Thin by design.
 */
import { buildModel } from "../src/models/model-factory.ts";
import { type RunTurnMessage, TURN_CHANNEL, type TurnOutcome } from "../src/runtime/channel.ts";
import { ModelCallSpans } from "../src/runtime/model-call-spans.ts";
import { RpcConnection } from "../src/rpc/rpc-connection.ts";
import { workerScopeTransport } from "../src/rpc/worker-port-transport.ts";
import { runTurnLoop } from "../src/runtime/turn-loop.ts";
import type { ChatMessage } from "../src/core/model.ts";

declare const self: Worker;

/** Conversations by key, mirrored by the pool (it says what to forget and what to send). */
const conversations = new Map<string, ChatMessage[]>();

const main = RpcConnection.accept(TURN_CHANNEL, workerScopeTransport(self));

/** The turn's whole conversation: the cached prefix plus what the main thread sent. */
function conversationOf(params: RunTurnMessage): ChatMessage[] | undefined {
  for (const key of params.forget) conversations.delete(key);
  const cached = conversations.get(params.historyKey) ?? [];
  if (cached.length !== params.historyBase) return undefined;
  for (const item of params.history) cached.push(item);
  conversations.set(params.historyKey, cached);
  return cached;
}

async function runTurn(params: RunTurnMessage, signal: AbortSignal): Promise<TurnOutcome> {
  const history = conversationOf(params);
  if (!history) {
    const text = `turn worker holds a different conversation prefix than the daemon (base ${params.historyBase})`;
    return { status: "failed", message: text };
  }
  const turnId = params.turnId;
  // Tracing on: the worker names each model call's span itself (D324).
  const spans = params.trace === undefined ? undefined : new ModelCallSpans(params.trace);
  const ended = (outcome: TurnOutcome) => spans?.ended(outcome) ?? outcome;
  try {
    const model = await buildModel(params.model, async () => (await main.request("script-cursor", { turnId })).index);
    const outcome = await runTurnLoop(
      model,
      history,
      {
        part: (messageId, part) => main.notify("message-part", { turnId, messageId, part }),
        commitResponse: async (draft) => {
          await main.request("commit-response", { turnId, draft: spans?.answered(draft) ?? draft });
        },
        runTool: (call) => main.request("run-tool", { turnId, call }),
        ...(spans === undefined ? {} : { modelCallStarting: () => spans.starting() }),
      },
      signal,
      params.maxSteps,
      params.tools ?? [],
      params.system,
    );
    return ended(outcome);
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    return ended({ status: "failed", message: text, code: "CONFIG" });
  }
}

main.handle("run-turn", runTurn, { cancelable: true }).onNotification("forget", (params) => {
  for (const key of params.keys) conversations.delete(key);
});
