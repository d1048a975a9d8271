/**
 * A2A v0.3.0's JSON-RPC wire, one module for every end of it spar has: svc's listener (it reads
 * requests and sends tasks, messages, stream updates and agent cards), the agent daemon's
 * discovery card, and the A2A client both daemons use (it sends requests and reads tasks,
 * messages and cards). What spar sends are types; what it reads are valibot schemas, loose (the
 * protocol lets either side add fields): a request's message is read strictly, with errors that
 * name the field (-32602), an answer leniently, as any conforming agent may word it. Each shape
 * is held to the protocol's own SDK types (`@a2a-js/sdk` 0.3, test/types/a2a-wire.type-test.ts),
 * so drift fails `tsc` (D348). Pure: types and valibot, no I/O.
 */
import * as v from "valibot";

export const A2A_PROTOCOL_VERSION = "0.3.0";

export type TaskState =
  | "submitted"
  | "working"
  | "input-required"
  | "completed"
  | "canceled"
  | "failed"
  | "rejected"
  | "auth-required"
  | "unknown";

/** States after which a task never changes again. */
export const TERMINAL_STATES: ReadonlySet<string> = new Set<TaskState>(["completed", "failed", "canceled", "rejected"]);

/** States in which the agent waits for its caller (it asks something, or wants other credentials). */
export const WAITING_STATES: ReadonlySet<string> = new Set<TaskState>(["input-required", "auth-required"]);

type Metadata = Record<string, unknown>;

// ---- JSON-RPC 2.0 -----------------------------------------------------------------------

const RequestId = v.union([v.string(), v.number(), v.null()]);
export type RequestIdValue = v.InferOutput<typeof RequestId>;

/** A request as the listener reads it (its params are read per method). */
export const JsonRpcRequest = v.looseObject({
  jsonrpc: v.literal("2.0", 'jsonrpc must be "2.0"'),
  id: v.optional(RequestId),
  method: v.string("method must be a string"),
  params: v.optional(v.unknown()),
});

/** A response as the client reads it: a result or an error. */
export const JsonRpcResponse = v.looseObject({
  jsonrpc: v.literal("2.0"),
  result: v.optional(v.unknown()),
  error: v.optional(v.looseObject({ code: v.number(), message: v.string(), data: v.optional(v.unknown()) })),
});

/** A request as the client sends it. */
export interface JsonRpcCall<P> {
  jsonrpc: "2.0";
  id: number;
  method: string;
  params: P;
}

// ---- messages ---------------------------------------------------------------------------

export interface TextPart {
  kind: "text";
  text: string;
}

/** A message spar sends: text only (a request's by the client, an agent's by svc). */
export interface Message {
  kind: "message";
  messageId: string;
  role: "user" | "agent";
  parts: TextPart[];
  taskId?: string;
  contextId?: string;
}

/** Any part, read: text parts carry `text`; other kinds are read so they can be named. */
const Part = v.looseObject({ kind: v.string("every part needs a kind"), text: v.optional(v.string()) });

/** A request's message (the listener's `message/send` and `message/stream`). */
export const IncomingMessage = v.looseObject({
  kind: v.optional(v.literal("message")),
  messageId: v.string("message.messageId must be a string"),
  role: v.picklist(["user", "agent"], 'message.role must be "user" or "agent"'),
  parts: v.array(Part, "message.parts must be an array"),
  contextId: v.optional(v.string()),
  taskId: v.optional(v.string()),
  metadata: v.optional(v.record(v.string(), v.unknown())),
});
export type IncomingMessage = v.InferOutput<typeof IncomingMessage>;

/** An agent's message as the client reads it (a `message/send` answer, a status's message). */
export const AnswerMessage = v.looseObject({
  kind: v.literal("message"),
  role: v.optional(v.string()),
  parts: v.array(Part),
  contextId: v.optional(v.string()),
  taskId: v.optional(v.string()),
});
export type AnswerMessage = v.InferOutput<typeof AnswerMessage>;

/** The texts of a message's or an artifact's text parts, in order. */
export function partTexts(parts: readonly { kind: string; text?: string | undefined }[]): string[] {
  return parts
    .filter((part) => part.kind === "text" && typeof part.text === "string")
    .map((part) => part.text as string);
}

// ---- request params ---------------------------------------------------------------------

/** `message/send` and `message/stream` params, read. */
export const MessageSendParams = v.looseObject({
  message: IncomingMessage,
  configuration: v.optional(v.looseObject({})),
  metadata: v.optional(v.record(v.string(), v.unknown())),
});

/** `message/send` params as the client sends them: one text message, blocking. */
export interface SendParams {
  message: Message;
  configuration: { blocking: boolean; acceptedOutputModes: string[] };
}

/** `tasks/get`, `tasks/cancel` and `tasks/resubscribe` params, read. */
export const TaskIdParams = v.looseObject({
  id: v.string("params.id must be a string"),
  historyLength: v.optional(v.number()),
  metadata: v.optional(v.record(v.string(), v.unknown())),
});

// ---- tasks ------------------------------------------------------------------------------

export interface TaskStatus {
  state: TaskState;
  timestamp: string;
  message?: Message;
}

export interface Artifact {
  artifactId: string;
  name: string;
  parts: TextPart[];
}

/** A task svc sends. */
export interface Task {
  kind: "task";
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts?: Artifact[];
  metadata?: Metadata;
}

export interface StatusUpdate {
  kind: "status-update";
  taskId: string;
  contextId: string;
  status: TaskStatus;
  final: boolean;
  metadata?: Metadata;
}

export interface ArtifactUpdate {
  kind: "artifact-update";
  taskId: string;
  contextId: string;
  artifact: Artifact;
  lastChunk: boolean;
}

/** What a `message/stream` or `tasks/resubscribe` stream carries. */
export type StreamEvent = Task | StatusUpdate | ArtifactUpdate;

/** A task as the client reads it: any state string (a newer agent may add states). */
export const AnswerTask = v.looseObject({
  kind: v.literal("task"),
  id: v.string(),
  contextId: v.optional(v.string()),
  status: v.looseObject({ state: v.string(), message: v.optional(AnswerMessage) }),
  artifacts: v.optional(v.array(v.looseObject({ parts: v.array(Part) }))),
  history: v.optional(v.array(AnswerMessage)),
});
export type AnswerTask = v.InferOutput<typeof AnswerTask>;

// ---- agent cards ------------------------------------------------------------------------

export interface AgentSkill {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples?: string[];
  inputModes?: string[];
  outputModes?: string[];
}

export type SecurityScheme = { type: "http"; scheme: string; bearerFormat?: string } | { type: "mutualTLS" };

/** The part of an AgentCard spar's cards fill (svc's per workload and aggregated, the agent's discovery card). */
export interface AgentCard {
  protocolVersion: string;
  name: string;
  description: string;
  url: string;
  preferredTransport?: string;
  additionalInterfaces?: { url: string; transport: string }[];
  version: string;
  provider?: { organization: string; url: string };
  documentationUrl?: string;
  capabilities: { streaming: boolean; pushNotifications: boolean; stateTransitionHistory: boolean };
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: AgentSkill[];
  securitySchemes?: Record<string, SecurityScheme>;
  security?: Record<string, string[]>[];
}

/** A card as the client reads it: where its JSON-RPC interface is. */
export const AnswerCard = v.looseObject({
  name: v.optional(v.string()),
  url: v.string(),
  preferredTransport: v.optional(v.string()),
  additionalInterfaces: v.optional(v.array(v.looseObject({ url: v.string(), transport: v.string() }))),
});

/** The JSON-RPC endpoint a card names: its `url` when JSON-RPC is preferred (the default), else an additional interface. */
export function jsonRpcUrl(card: v.InferOutput<typeof AnswerCard>): string | undefined {
  if (card.preferredTransport === undefined || card.preferredTransport.toUpperCase() === "JSONRPC") return card.url;
  return card.additionalInterfaces?.find((entry) => entry.transport.toUpperCase() === "JSONRPC")?.url;
}
