/**
 * The A2A wire (src/protocols/a2a/a2a-wire.ts) held to the protocol's own SDK types, `@a2a-js/sdk`
 * 0.3.14 (the dev dependency `a2a03`, A2A v0.3.0), by tsc alone (D348): every shape spar sends
 * fits the SDK's type and names no field it lacks; every schema spar reads accepts whatever the
 * SDK's type allows a peer to send, and reads no field the SDK's type lacks. Compiled, never run.
 */
import type * as Sdk from "a2a03";
import type * as v from "valibot";
import type * as Wire from "../../src/protocols/a2a/a2a-wire.ts";
import type { Known, Misfits, NoneOf, Unnamed, UnnamedIn } from "./conformance.ts";

/** What spar sends, against the SDK's type of it. */
type Sent = {
  message: [Wire.Message, Sdk.Message];
  task: [Wire.Task, Sdk.Task];
  "status-update": [Wire.StatusUpdate, Sdk.TaskStatusUpdateEvent];
  "artifact-update": [Wire.ArtifactUpdate, Sdk.TaskArtifactUpdateEvent];
  "agent-card": [Wire.AgentCard, Sdk.AgentCard];
  "send-params": [Wire.SendParams, Sdk.MessageSendParams];
  "request-envelope": [Omit<Wire.JsonRpcCall<unknown>, "params">, Omit<Sdk.JSONRPCRequest, "params">];
  "response-id": [Wire.RequestIdValue, Sdk.JSONRPCSuccessResponse["id"]];
};

/** What a peer may send, against the input of the schema spar reads it with. */
type Read = {
  request: [Sdk.JSONRPCRequest, Known<v.InferInput<typeof Wire.JsonRpcRequest>>];
  response: [Sdk.JSONRPCSuccessResponse | Sdk.JSONRPCErrorResponse, Known<v.InferInput<typeof Wire.JsonRpcResponse>>];
  "send-params": [Sdk.MessageSendParams, Known<v.InferInput<typeof Wire.MessageSendParams>>];
  "task-params": [Sdk.TaskQueryParams, Known<v.InferInput<typeof Wire.TaskIdParams>>];
  "incoming-message": [Sdk.Message, Known<v.InferInput<typeof Wire.IncomingMessage>>];
  "answer-message": [Sdk.Message, Known<v.InferInput<typeof Wire.AnswerMessage>>];
  "answer-task": [Sdk.Task, Known<v.InferInput<typeof Wire.AnswerTask>>];
  "answer-card": [Sdk.AgentCard, Known<v.InferInput<typeof Wire.AnswerCard>>];
};

/** The fields each schema reads, against the SDK's type of what it reads. */
type ReadFields = {
  request: [v.InferOutput<typeof Wire.JsonRpcRequest>, Sdk.JSONRPCRequest];
  response: [v.InferOutput<typeof Wire.JsonRpcResponse>, Sdk.JSONRPCSuccessResponse | Sdk.JSONRPCErrorResponse];
  "send-params": [v.InferOutput<typeof Wire.MessageSendParams>, Sdk.MessageSendParams];
  "task-params": [v.InferOutput<typeof Wire.TaskIdParams>, Sdk.TaskQueryParams];
  "incoming-message": [Wire.IncomingMessage, Sdk.Message];
  "answer-message": [Wire.AnswerMessage, Sdk.Message];
  "answer-task": [Wire.AnswerTask, Sdk.Task];
  "answer-card": [v.InferOutput<typeof Wire.AnswerCard>, Sdk.AgentCard];
};

export type A2aWireConforms = [
  NoneOf<Misfits<Sent>>,
  NoneOf<UnnamedIn<Sent>>,
  NoneOf<Misfits<Read>>,
  NoneOf<UnnamedIn<ReadFields>>,
  NoneOf<Exclude<Wire.TaskState, Sdk.TaskState>>,
  NoneOf<Exclude<Sdk.TaskState, Wire.TaskState>>,
];

// The checks bite: a drifted shape fails them (each line must fail to compile).
export type A2aChecksBite = [
  // @ts-expect-error a renamed required field no longer fits the SDK's Message
  NoneOf<Misfits<{ renamed: [Omit<Wire.Message, "messageId"> & { messageID: string }, Sdk.Message] }>>,
  // @ts-expect-error an optional field the SDK does not name is caught by its path
  NoneOf<Unnamed<Wire.Task & { status: { note?: string } }, Sdk.Task, "task">>,
  // @ts-expect-error a schema stricter than the SDK (a field it leaves optional made required) refuses a peer's message
  NoneOf<Misfits<{ strict: [Sdk.Message, { kind: "message"; parts: unknown[]; contextId: string }] }>>,
];
