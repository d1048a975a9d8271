/**
 * Boundaries from the model stream (D296), end to end with the protocols' own clients: the
 * coordinator's first model call streams text and then a delegation, the worker's call waits
 * 1.5 s before finishing, the coordinator then answers. The AG-UI client (`@ag-ui/client`, its
 * own ordering checks on) and the A2A v0.3 client receive the first message's frames while the
 * worker still waits, i.e. from the stream's parts, not from rows read after the turn; every
 * message id they see is the id of the model-response row the session committed for it.
 */
import { expect, test } from "bun:test";
import type { HttpAgent } from "@ag-ui/client";
import type { BaseEvent } from "@ag-ui/core";
import { ClientFactory, JsonRpcTransportFactory } from "a2a03/client";
import type { CommittedRow, ModelResponseEvent } from "../../../src/core/events.ts";
import { agentSaying, aguiWorkload, startAgui } from "../../support/agui-daemon.ts";
import { A2A_SECRET, bearerFetch, startA2aDaemon, textMessage } from "../../support/a2a-daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { storedRows } from "../../support/gated-workload.ts";
import { say } from "../../support/scripted.ts";

const scope = daemonScope();
const WAIT_MS = 1500;

/** One model call: `parts` in one response, after `delayMs`. */
const response = (parts: unknown[], delayMs = 0) => ({
  request: {},
  responses: [{ ...(delayMs > 0 ? { delayMs } : {}), content: { role: "model", parts }, turnComplete: true }],
});

const SCRIPT = [
  response([{ text: "Delegating." }, { functionCall: { name: "worker", args: { request: "look at web" } } }]),
  response([{ functionCall: { name: "finish_task", args: { result: "web is fine" } } }], WAIT_MS),
  say("All good."),
];

/** The coordinator's committed model responses, by text. */
async function responseRows(sessionDb: string, sessionId: string): Promise<Map<string, string>> {
  const rows: CommittedRow[] = await storedRows(sessionDb, "svc", sessionId);
  const responses = rows
    .map((row) => row.event)
    .filter((event): event is ModelResponseEvent => event.kind === "model-response");
  return new Map(responses.map((event) => [event.text, event.id]));
}

test("AG-UI: a message's frames reach the client as the model streams, under its row's id, each boundary once", async () => {
  const { url, daemon } = await startAgui(scope, aguiWorkload(), SCRIPT);
  const agent: HttpAgent = agentSaying(url, "t-stream", "check web");
  const seen: { event: BaseEvent & Record<string, unknown>; at: number }[] = [];
  await agent.runAgent({}, { onEvent: ({ event }) => void seen.push({ event: event as never, at: Date.now() }) });
  const types = seen.map(({ event }) => String(event.type));
  expect(types).toEqual([
    "RUN_STARTED",
    "STATE_SNAPSHOT",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "TOOL_CALL_RESULT",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "RUN_FINISHED",
  ]);
  const first = seen[3];
  const finished = seen.at(-1);
  expect(first?.event.delta).toBe("Delegating.");
  // Sent while the worker's model call still waited: it came from the stream, not the log afterwards.
  expect((finished?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(WAIT_MS - 300);
  await daemon.sigterm();
  const rows = await responseRows(daemon.sessionDb, "agui-t-stream");
  expect(seen[2]?.event.messageId).toBe(rows.get("Delegating."));
  expect(seen[5]?.event.parentMessageId).toBe(rows.get("Delegating."));
  expect(seen[9]?.event.messageId).toBe(rows.get("All good."));
  expect(JSON.parse(String(seen[6]?.event.delta))).toEqual({ request: "look at web" });
  expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "All good." });
});

test("A2A: a status update per model response reaches the client while the turn still runs, its message id the row's", async () => {
  const { a2aUrl, daemon } = await startA2aDaemon(scope, SCRIPT);
  const a2a = await new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl: bearerFetch(A2A_SECRET) })],
  }).createFromUrl(a2aUrl);
  const frames: { frame: Record<string, any>; at: number }[] = [];
  let taskId = "";
  for await (const frame of a2a.sendMessageStream({ message: textMessage("check web") as never })) {
    frames.push({ frame: frame as never, at: Date.now() });
    if (frame.kind === "task") taskId = frame.id;
  }
  expect(frames.map(({ frame }) => frame.kind)).toEqual([
    "task",
    "status-update",
    "status-update",
    "artifact-update",
    "status-update",
  ]);
  const [, delegating, answer, , final] = frames;
  expect(delegating?.frame.status.message.parts).toEqual([{ kind: "text", text: "Delegating." }]);
  expect(answer?.frame.status.message.parts).toEqual([{ kind: "text", text: "All good." }]);
  expect((final?.at ?? 0) - (delegating?.at ?? 0)).toBeGreaterThanOrEqual(WAIT_MS - 300);
  await daemon.sigterm();
  const rows = await responseRows(daemon.sessionDb, taskId);
  expect(delegating?.frame.status.message.messageId).toBe(rows.get("Delegating."));
  expect(answer?.frame.status.message.messageId).toBe(rows.get("All good."));
});
