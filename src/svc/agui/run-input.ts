/**
 * The AG-UI `RunAgentInput` svc reads (docs/svc-agui.md#endpoints, #sessions, #resume), checked at
 * the edge with valibot: `threadId`, `runId` and `messages` required, `parentRunId`, `state` and
 * `resume` read, every other field (`tools`, `context`, `forwardedProps`, `protocolVersion`)
 * tolerated and ignored. Also where a run's session id comes from: `agui-<threadId>` under
 * `per_thread`, `agui-<runId>` under `per_run` (a resume continues its parent's session). A client
 * never names a raw session id. Pure.
 */
import * as v from "valibot";
import type { AguiSessionModel } from "../workload/workload.ts";

/** The longest thread or run id taken (a session id is built from it). */
const MAX_ID_LENGTH = 200;

const RunId = (name: string) =>
  v.pipe(
    v.string(`${name} must be a string`),
    v.minLength(1, `${name} must not be empty`),
    v.maxLength(MAX_ID_LENGTH, `${name} is longer than ${MAX_ID_LENGTH} characters`),
    v.regex(/^[\x21-\x7e]+$/, `${name} must be printable ASCII without spaces`),
  );

const ContentPart = v.looseObject({ type: v.string(), text: v.optional(v.string()) });

/** A history message: text, content parts, or an activity's object (AG-UI 1.0 `ActivityMessage`). */
const Message = v.looseObject({
  id: v.optional(v.string()),
  role: v.string("each message needs a role"),
  content: v.optional(v.union([v.string(), v.array(ContentPart), v.record(v.string(), v.unknown()), v.null()])),
});

export const ResumeEntrySchema = v.looseObject({
  interruptId: v.pipe(v.string("resume[].interruptId must be a string"), v.minLength(1)),
  status: v.picklist(["resolved", "cancelled"], 'resume[].status must be "resolved" or "cancelled"'),
  payload: v.optional(v.unknown()),
});

export type ResumeEntry = v.InferOutput<typeof ResumeEntrySchema>;

export const RunAgentInputSchema = v.looseObject({
  threadId: RunId("threadId"),
  runId: RunId("runId"),
  parentRunId: v.optional(RunId("parentRunId")),
  state: v.optional(v.unknown()),
  messages: v.array(Message, "messages must be an array"),
  resume: v.optional(v.array(ResumeEntrySchema, "resume must be an array")),
});

export type RunAgentInput = v.InferOutput<typeof RunAgentInputSchema>;

/** The session prefix of AG-UI runs (docs/svc-agui.md#sessions). */
export const AGUI_PREFIX = "agui-";

/** The session a run lands on; a resume under `per_run` continues the run it names as its parent. */
export function runSessionId(input: RunAgentInput, model: AguiSessionModel): string {
  if (model === "per_thread") return `${AGUI_PREFIX}${input.threadId}`;
  const resuming = input.resume !== undefined && input.resume.length > 0;
  return `${AGUI_PREFIX}${resuming && input.parentRunId !== undefined ? input.parentRunId : input.runId}`;
}

/** The text of the input's last user message (what the model is told); undefined when there is none. */
export function lastUserText(input: RunAgentInput): string | undefined {
  for (let index = input.messages.length - 1; index >= 0; index--) {
    const message = input.messages[index];
    if (message?.role !== "user") continue;
    const content = message.content;
    if (typeof content === "string") return content;
    if (Array.isArray(content))
      return content
        .filter((part) => part.type === "text" && typeof part.text === "string")
        .map((part) => part.text)
        .join("\n");
    return undefined;
  }
  return undefined;
}

/**
 * per_run: an interrupt's AG-UI id names the session it waits in, `<session id>/<interrupt id>`,
 * so a resume finds its session from the interrupts it answers, durably, however many runs the
 * session has continued through (D299).
 */
export function runInterruptId(sessionId: string, interruptId: string): string {
  return `${sessionId}/${interruptId}`;
}

/** The session and interrupt a per_run interrupt id names; undefined when it names no `agui-` session. */
export function splitRunInterruptId(id: string): { sessionId: string; interruptId: string } | undefined {
  const at = id.lastIndexOf("/");
  if (at <= 0 || at === id.length - 1) return undefined;
  const sessionId = id.slice(0, at);
  return sessionId.startsWith(AGUI_PREFIX) ? { sessionId, interruptId: id.slice(at + 1) } : undefined;
}
