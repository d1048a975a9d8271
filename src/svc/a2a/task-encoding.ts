/**
 * How a task's session reads as A2A v0.3.0 (the one place that encodes it, so the listener only
 * frames): the answer is the text of the last model response after the task's last prompt, a
 * model response with text is a `working` status update carrying it, sent when the response's
 * text part ends in the core's model stream (D296; its message id is the response's), the answer
 * is the `result` text artifact, and every state carries an agent message saying why when it is
 * not plain work (the questions of `input-required`).
 */
import type { Publication, SessionEvent } from "../../core/events.ts";
import type {
  Artifact,
  ArtifactUpdate,
  Message,
  StatusUpdate,
  Task,
  TaskState,
  TaskStatus,
} from "../../protocols/a2a/a2a-wire.ts";

/** The durable row naming a task's context and skill (written when the task is minted). */
export const TASK_ROW = "a2a-task";

export interface TaskIdentity {
  id: string;
  contextId: string;
}

export interface TaskSnapshot {
  state: TaskState;
  /** Why, for a state that is not plain work (questions, a failure, a cancel). */
  note?: string;
  /** The answer, when the task has one. */
  answer?: string;
  at: string;
}

export function agentMessage(task: TaskIdentity, text: string, messageId: string = crypto.randomUUID()): Message {
  return {
    kind: "message",
    messageId,
    role: "agent",
    parts: [{ kind: "text", text }],
    taskId: task.id,
    contextId: task.contextId,
  };
}

export function taskStatus(task: TaskIdentity, snapshot: TaskSnapshot): TaskStatus {
  const text = snapshot.note ?? (snapshot.state === "completed" ? snapshot.answer : undefined);
  return {
    state: snapshot.state,
    timestamp: snapshot.at,
    ...(text === undefined ? {} : { message: agentMessage(task, text) }),
  };
}

export function resultArtifact(answer: string): Artifact {
  return { artifactId: "result", name: "result", parts: [{ kind: "text", text: answer }] };
}

export function encodeTask(task: TaskIdentity, snapshot: TaskSnapshot): Task {
  return {
    kind: "task",
    id: task.id,
    contextId: task.contextId,
    status: taskStatus(task, snapshot),
    ...(snapshot.answer === undefined || snapshot.state !== "completed"
      ? {}
      : { artifacts: [resultArtifact(snapshot.answer)] }),
  };
}

/**
 * A task stream's status updates from the session's publications: the text of a streamed
 * message is gathered from its start and sent when its text part ends; a model-response row
 * whose message did not stream from its start (the stream joined late) is sent from the row.
 * One per stream.
 */
export class StatusUpdateEncoder {
  readonly #task: TaskIdentity;
  /** Text gathered per streamed message. */
  readonly #texts = new Map<string, string>();

  constructor(task: TaskIdentity) {
    this.#task = task;
  }

  publication(publication: Publication): StatusUpdate | undefined {
    if (publication.type === "row") {
      const event = publication.row.event;
      if (this.#texts.has(event.id)) {
        this.#texts.delete(event.id);
        return undefined;
      }
      return modelResponseUpdate(this.#task, event);
    }
    const frame = publication.frame;
    const gathered = this.#texts.get(
      frame.type === "text-delta" || frame.type === "message-part" ? frame.messageId : "",
    );
    if (frame.type === "text-delta" && gathered !== undefined) this.#texts.set(frame.messageId, gathered + frame.text);
    if (frame.type !== "message-part") return undefined;
    // Text is gathered from its start only: a stream that joined mid-message sends the row instead.
    if (frame.part.kind === "text-start" && gathered === undefined) this.#texts.set(frame.messageId, "");
    if (frame.part.kind !== "text-end" || gathered === undefined) return undefined;
    const text = gathered;
    if (text.trim() === "") return undefined;
    return workingUpdate(this.#task, text, frame.messageId, new Date().toISOString());
  }
}

/** The status update of one committed model response with text (undefined for one without). */
export function modelResponseUpdate(task: TaskIdentity, event: SessionEvent): StatusUpdate | undefined {
  if (event.kind !== "model-response" || event.text.trim() === "") return undefined;
  return workingUpdate(task, event.text, event.id, event.ts);
}

function workingUpdate(task: TaskIdentity, text: string, messageId: string, at: string): StatusUpdate {
  return {
    kind: "status-update",
    taskId: task.id,
    contextId: task.contextId,
    status: { state: "working", timestamp: at, message: agentMessage(task, text, messageId) },
    final: false,
  };
}

export function artifactUpdate(task: TaskIdentity, answer: string): ArtifactUpdate {
  return {
    kind: "artifact-update",
    taskId: task.id,
    contextId: task.contextId,
    artifact: resultArtifact(answer),
    lastChunk: true,
  };
}

export function finalUpdate(task: TaskIdentity, snapshot: TaskSnapshot): StatusUpdate {
  return {
    kind: "status-update",
    taskId: task.id,
    contextId: task.contextId,
    status: taskStatus(task, snapshot),
    final: true,
  };
}

/**
 * What the transcript proves: the answer of the last prompt (its last model response with text,
 * once a model response after it completed its turn), and when the last row was written.
 */
export function transcriptOutcome(events: readonly SessionEvent[]): { answer?: string; at?: string } {
  let lastPrompt = -1;
  for (let index = events.length - 1; index >= 0; index--) {
    const event = events[index];
    if (event?.kind === "user-message") {
      lastPrompt = index;
      break;
    }
  }
  let answer: string | undefined;
  let complete = false;
  for (const event of events.slice(lastPrompt + 1)) {
    if (event.kind !== "model-response") continue;
    if (event.text.trim() !== "") answer = event.text;
    complete = event.turnComplete;
  }
  const at = events.at(-1)?.ts;
  return { ...(complete && answer !== undefined ? { answer } : {}), ...(at === undefined ? {} : { at }) };
}

/** The context id a task's row names, if the session has one. */
export function contextOf(events: readonly SessionEvent[]): string | undefined {
  for (const event of events) {
    if (event.kind === "audit" && event.name === TASK_ROW && typeof event.metadata.context_id === "string")
      return event.metadata.context_id;
  }
  return undefined;
}
