/**
 * Turn worker entrypoint: receives `run-turn` messages, builds the model, runs the turn loop,
 * and speaks only the typed channel of src/runtime/channel.ts. Thin by design.
 */
import { buildModel } from "../src/models/model-factory.ts";
import {
  CHANNEL_VERSION,
  type FromWorker,
  type ReplyResult,
  type RunTurnMessage,
  type ToolRunResult,
  type WorkerRequest,
  isToWorker,
} from "../src/runtime/channel.ts";
import { runTurnLoop } from "../src/runtime/turn-loop.ts";
import type { ChatMessage } from "../src/core/model.ts";

declare const self: Worker;

const running = new Map<string, AbortController>();
/** Conversations by key, mirrored by the pool (it says what to forget and what to send). */
const conversations = new Map<string, ChatMessage[]>();
const waiting = new Map<number, (result: ReplyResult) => void>();
let nextRequestId = 1;

function post(message: FromWorker): void {
  self.postMessage(message);
}

function ask(turnId: string, request: WorkerRequest): Promise<unknown> {
  const requestId = nextRequestId++;
  return new Promise((resolve, reject) => {
    waiting.set(requestId, (result) => (result.ok ? resolve(result.value) : reject(new Error(result.error))));
    post({ type: "request", turnId, requestId, request });
  });
}

/** The turn's whole conversation: the cached prefix plus what the main thread sent. */
function conversationOf(message: RunTurnMessage): ChatMessage[] | undefined {
  for (const key of message.forget) conversations.delete(key);
  const cached = conversations.get(message.historyKey) ?? [];
  if (cached.length !== message.historyBase) return undefined;
  for (const item of message.history) cached.push(item);
  conversations.set(message.historyKey, cached);
  return cached;
}

async function runTurn(message: RunTurnMessage): Promise<void> {
  const history = conversationOf(message);
  if (!history) {
    const text = `turn worker holds a different conversation prefix than the daemon (base ${message.historyBase})`;
    post({ type: "turn-end", turnId: message.turnId, outcome: { status: "failed", message: text } });
    return;
  }
  const controller = new AbortController();
  running.set(message.turnId, controller);
  const turnId = message.turnId;
  try {
    const model = await buildModel(message.model, async () => {
      const reply = (await ask(turnId, { kind: "script-cursor" })) as { index: number };
      return reply.index;
    });
    const outcome = await runTurnLoop(
      model,
      history,
      {
        textDelta: (text) => post({ type: "text-delta", turnId, text }),
        commitResponse: async (draft) => {
          await ask(turnId, { kind: "commit-response", draft });
        },
        runTool: async (call) => (await ask(turnId, { kind: "run-tool", call })) as ToolRunResult,
      },
      controller.signal,
      message.maxSteps,
      message.tools ?? [],
      message.system,
    );
    post({ type: "turn-end", turnId, outcome });
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    post({ type: "turn-end", turnId, outcome: { status: "failed", message: text, code: "CONFIG" } });
  } finally {
    running.delete(turnId);
  }
}

self.onmessage = (event: MessageEvent) => {
  const message = event.data;
  if (!isToWorker(message)) return;
  switch (message.type) {
    case "hello":
      post({ type: "ready", version: CHANNEL_VERSION });
      break;
    case "run-turn":
      void runTurn(message);
      break;
    case "cancel":
      running.get(message.turnId)?.abort();
      break;
    case "forget":
      for (const key of message.keys) conversations.delete(key);
      break;
    case "ping":
      post({ type: "pong", id: message.id });
      break;
    case "reply": {
      const resolve = waiting.get(message.requestId);
      waiting.delete(message.requestId);
      resolve?.(message.result);
      break;
    }
  }
};
