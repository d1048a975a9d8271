/**
 * The A2A v0.3.0 shapes the client reads (the public A2A v0.3.0 specification; what the client does
 * with them: docs/a2a-client.md#the-tool), as valibot schemas
 * loose enough for any conforming agent (unknown fields kept out of the way, not refused): the
 * JSON-RPC envelope, a Task, a Message, text parts and an agent card's transport fields. What the
 * client sends is built in a2a-client.ts. Pure.
 */
import * as v from "valibot";

const Part = v.looseObject({ kind: v.string(), text: v.optional(v.string()) });

export const MessageShape = v.looseObject({
  kind: v.literal("message"),
  role: v.optional(v.string()),
  parts: v.array(Part),
  contextId: v.optional(v.string()),
  taskId: v.optional(v.string()),
});

export const TaskShape = v.looseObject({
  kind: v.literal("task"),
  id: v.string(),
  contextId: v.optional(v.string()),
  status: v.looseObject({ state: v.string(), message: v.optional(MessageShape) }),
  artifacts: v.optional(v.array(v.looseObject({ parts: v.array(Part) }))),
  history: v.optional(v.array(MessageShape)),
});

export type A2aMessage = v.InferOutput<typeof MessageShape>;
export type A2aTask = v.InferOutput<typeof TaskShape>;

export const RpcEnvelope = v.looseObject({
  jsonrpc: v.literal("2.0"),
  result: v.optional(v.unknown()),
  error: v.optional(v.looseObject({ code: v.number(), message: v.string(), data: v.optional(v.unknown()) })),
});

export const CardShape = v.looseObject({
  name: v.optional(v.string()),
  url: v.string(),
  preferredTransport: v.optional(v.string()),
  additionalInterfaces: v.optional(v.array(v.looseObject({ url: v.string(), transport: v.string() }))),
});

export type AgentCardTransports = v.InferOutput<typeof CardShape>;

/** States after which a task never changes again. */
export const TERMINAL_STATES: ReadonlySet<string> = new Set(["completed", "failed", "canceled", "rejected"]);

/** States in which the remote agent waits for the caller (it asks something, or wants other credentials). */
export const WAITING_STATES: ReadonlySet<string> = new Set(["input-required", "auth-required"]);

/** The text parts of a message, joined by blank lines. */
export function messageText(message: A2aMessage | undefined): string {
  if (message === undefined) return "";
  return message.parts
    .filter((part) => part.kind === "text" && typeof part.text === "string")
    .map((part) => part.text as string)
    .join("\n\n");
}

/** A task's answer: its artifacts' text, else its status message, else the last agent message of its history. */
export function taskText(task: A2aTask): string {
  const artifacts = (task.artifacts ?? [])
    .flatMap((artifact) => artifact.parts)
    .filter((part) => part.kind === "text" && typeof part.text === "string")
    .map((part) => part.text as string);
  if (artifacts.length > 0) return artifacts.join("\n\n");
  const status = messageText(task.status.message);
  if (status !== "") return status;
  const replies = (task.history ?? []).filter((message) => message.role === "agent");
  return messageText(replies[replies.length - 1]);
}

/** The JSON-RPC endpoint a card names: its `url` when JSON-RPC is preferred (the default), else an additional interface. */
export function jsonRpcUrl(card: AgentCardTransports): string | undefined {
  if (card.preferredTransport === undefined || card.preferredTransport.toUpperCase() === "JSONRPC") return card.url;
  return card.additionalInterfaces?.find((entry) => entry.transport.toUpperCase() === "JSONRPC")?.url;
}
