/**
 * A2A v0.3.0's wire at svc's edge: the JSON-RPC envelope and the params of the four methods, read
 * with valibot (loose: the v0.3.0 schema lets clients add fields), and the shapes svc answers
 * (Task, status and artifact updates). Parts other than text are read so a message without text
 * can be refused by name (-32602).
 */
import * as v from "valibot";

export const A2A_PROTOCOL_VERSION = "0.3.0";

/** The prefix of every task id svc mints (a task id is its session id). */
export const TASK_PREFIX = "a2a-";

const RequestId = v.union([v.string(), v.number(), v.null()]);

export const JsonRpcEnvelope = v.looseObject({
  jsonrpc: v.literal("2.0", 'jsonrpc must be "2.0"'),
  id: v.optional(RequestId),
  method: v.string("method must be a string"),
  params: v.optional(v.unknown()),
});
export type JsonRpcEnvelope = v.InferOutput<typeof JsonRpcEnvelope>;
export type RequestIdValue = v.InferOutput<typeof RequestId>;

const Part = v.looseObject({ kind: v.string("every part needs a kind") });

const Metadata = v.optional(v.record(v.string(), v.unknown()));

export const IncomingMessage = v.looseObject({
  kind: v.optional(v.literal("message")),
  messageId: v.string("message.messageId must be a string"),
  role: v.picklist(["user", "agent"], 'message.role must be "user" or "agent"'),
  parts: v.array(Part, "message.parts must be an array"),
  contextId: v.optional(v.string()),
  taskId: v.optional(v.string()),
  metadata: Metadata,
});
export type IncomingMessage = v.InferOutput<typeof IncomingMessage>;

export const MessageSendParams = v.looseObject({
  message: IncomingMessage,
  configuration: v.optional(v.looseObject({})),
  metadata: Metadata,
});
export type MessageSendParams = v.InferOutput<typeof MessageSendParams>;

export const TaskIdParams = v.looseObject({
  id: v.string("params.id must be a string"),
  historyLength: v.optional(v.number()),
  metadata: Metadata,
});

export type TaskState = "submitted" | "working" | "input-required" | "completed" | "canceled" | "failed";

export interface TextPart {
  kind: "text";
  text: string;
}

export interface AgentMessage {
  kind: "message";
  messageId: string;
  role: "agent";
  parts: TextPart[];
  taskId: string;
  contextId: string;
}

export interface TaskStatus {
  state: TaskState;
  timestamp: string;
  message?: AgentMessage;
}

export interface Artifact {
  artifactId: string;
  name: string;
  parts: TextPart[];
}

export interface Task {
  kind: "task";
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts?: Artifact[];
  metadata?: Record<string, unknown>;
}

export interface StatusUpdate {
  kind: "status-update";
  taskId: string;
  contextId: string;
  status: TaskStatus;
  final: boolean;
  metadata?: Record<string, unknown>;
}

export interface ArtifactUpdate {
  kind: "artifact-update";
  taskId: string;
  contextId: string;
  artifact: Artifact;
  lastChunk: boolean;
}

export type StreamEvent = Task | StatusUpdate | ArtifactUpdate;

/** The text of a message's text parts, joined by newlines; undefined when it has none. */
export function messageText(message: IncomingMessage): string | undefined {
  const texts = message.parts
    .filter((part) => part.kind === "text" && typeof part.text === "string")
    .map((part) => part.text as string);
  return texts.length === 0 ? undefined : texts.join("\n");
}
