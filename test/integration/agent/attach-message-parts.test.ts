/**
 * `spar agent`'s attach stream carries a response's boundaries (D296) to a real SSE client
 * (`eventsource`): `message-part` text-start, the `text-delta` frames, text-end, each tool call's
 * start / argument text / end, all under the response's message id, which is the `ID` of the
 * `agent` row committed for it.
 */
import { afterAll, expect, test } from "bun:test";
import type { Frame } from "../../support/sse-client.ts";
import { type ScriptedDaemon, say, startScripted } from "../../support/scripted.ts";

let subject: ScriptedDaemon | undefined;
afterAll(async () => subject?.stop());

test("a streamed response's parts and text arrive under one message id, the id its committed row carries", async () => {
  const textAndCall = {
    request: {},
    responses: [
      {
        content: {
          role: "model",
          parts: [{ text: "Let me look." }, { functionCall: { name: "read_file", args: { path: "README.md" } } }],
        },
        turnComplete: true,
      },
    ],
  };
  subject = await startScripted([textAndCall, say("Done.")], ["--permission-mode=yolo"]);
  const { daemon, events } = subject;
  events.source.addEventListener("message-part", (event) =>
    events.frames.push({ event: "message-part", id: undefined, data: JSON.parse(event.data) }),
  );
  const from = events.frames.length;
  const response = await fetch(`${daemon.baseUrl}/sessions/default/inject`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message: "read the readme" }),
  });
  expect(response.status).toBeLessThan(300);
  await events.waitFor((frame) => frame.event === "turn-complete", 15_000, from);
  const turn = events.frames.slice(from);
  const streamed = turn.filter((frame) => frame.event === "message-part" || frame.event === "text-delta");
  const first = String(streamed[0]?.data.message_id);
  const shape = (frame: Frame) => (frame.event === "text-delta" ? `text:${frame.data.text}` : String(frame.data.part));
  expect(streamed.filter((frame) => frame.data.message_id === first).map(shape)).toEqual([
    "text-start",
    "text:Let me look.",
    "text-end",
    "tool-call-start",
    "tool-call-delta",
    "tool-call-end",
  ]);
  const callStart = streamed.find((frame) => frame.data.part === "tool-call-start");
  expect(callStart?.data).toMatchObject({ name: "read_file", call_id: expect.any(String) });
  const argText = streamed.find((frame) => frame.data.part === "tool-call-delta")?.data.delta;
  expect(JSON.parse(String(argText))).toEqual({ path: "README.md" });
  // Each response's parts come before its row, and the row's ID is the message id.
  const rows = turn
    .filter((frame) => frame.event === "agent")
    .map((frame) => frame.data.event as Record<string, unknown>);
  const responses = rows.filter((row) => (row.Content as { role?: string } | undefined)?.role === "model");
  expect(responses.map((row) => row.ID)).toContain(first);
  const partsEnd = turn.findIndex((frame) => frame.data.part === "tool-call-end");
  const rowAt = turn.findIndex(
    (frame) => frame.event === "agent" && (frame.data.event as { ID?: string }).ID === first,
  );
  expect(partsEnd).toBeGreaterThan(-1);
  expect(rowAt).toBeGreaterThan(partsEnd);
});
