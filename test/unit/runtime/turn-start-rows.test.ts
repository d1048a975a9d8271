import { expect, test } from "bun:test";
import { AUTO_CONTINUE_AUTHOR } from "../../../src/core/auto-continue.ts";
import type { ChatMessage } from "../../../src/core/model.ts";
import type { InboxItem } from "../../../src/core/session-store.ts";
import { REPAIR_AUTHOR } from "../../../src/runtime/turn-runner.ts";
import { type TurnStartInput, turnStartRows } from "../../../src/runtime/turn-start-rows.ts";

const item = (promptId: string, message: string): InboxItem => ({
  promptId,
  message,
  queuedAt: "2025-01-01T00:00:00Z",
  wake: true,
});

function input(overrides: Partial<TurnStartInput>): TurnStartInput {
  let next = 0;
  return {
    invocationId: "e-1",
    items: [],
    armed: undefined,
    history: [],
    modelName: "echo",
    framePrompt: (text) => text,
    header: (invocationId, author) => ({ id: `r${++next}`, ts: "2025-01-01T00:00:01Z", invocationId, author }),
    ...overrides,
  };
}

test("queued messages become one bundled prompt row that drains them, announced dequeued then streaming", () => {
  const rows = turnStartRows(input({ items: [item("p1", "first"), item("p2", "second")] }));
  expect(rows.human).toContain("2 messages arrived");
  expect(rows.drainedPromptIds).toEqual(["p1", "p2"]);
  expect(rows.events).toEqual([
    {
      id: "r1",
      ts: "2025-01-01T00:00:01Z",
      invocationId: "e-1",
      author: "user",
      kind: "user-message",
      text: rows.human,
      promptIds: ["p1", "p2"],
    },
  ]);
  expect(rows.before).toEqual([
    { type: "inbox", state: "dequeued", promptId: "p1", queuedAt: "0001-01-01T00:00:00Z" },
    { type: "inbox", state: "dequeued", promptId: "p2", queuedAt: "0001-01-01T00:00:00Z" },
    { type: "status-update", turnState: "streaming", model: "echo" },
  ]);
  expect(rows.messages).toEqual([{ role: "user", text: rows.human }]);
});

test("an armed continue turn writes the continue note under the auto-continue author and drains nothing", () => {
  const armed = { cause: "output-cap" as const, interruption: "e-0", promptId: "c1", attempt: 2 };
  const rows = turnStartRows(input({ armed, framePrompt: (text) => `[feedback]\n${text}` }));
  expect(rows.human).toBe("");
  expect(rows.drainedPromptIds).toEqual([]);
  const [prompt] = rows.events;
  expect(prompt).toMatchObject({
    author: AUTO_CONTINUE_AUTHOR,
    kind: "user-message",
    promptIds: [],
    autoContinue: { cause: "output-cap", interruption: "e-0", attempt: 2 },
  });
  expect(prompt?.kind === "user-message" && prompt.text.startsWith("[feedback]\n")).toBe(true);
  expect(rows.before[0]).toEqual({
    type: "inbox",
    state: "dequeued",
    promptId: "c1",
    queuedAt: "0001-01-01T00:00:00Z",
  });
});

test("a tool call a cut turn left unanswered is repaired before the prompt row", () => {
  const history: ChatMessage[] = [
    { role: "user", text: "go" },
    {
      role: "assistant",
      text: "",
      toolCalls: [
        { callId: "k1", name: "read", args: {} },
        { callId: "k2", name: "read", args: {} },
      ],
    },
    { role: "tool", callId: "k1", name: "read", output: {}, isError: false },
  ];
  const rows = turnStartRows(input({ items: [item("p1", "again")], history }));
  expect(rows.events.map((event) => [event.kind, event.author])).toEqual([
    ["tool-result", REPAIR_AUTHOR],
    ["user-message", "user"],
  ]);
  expect(rows.events[0]).toMatchObject({ callId: "k2", isError: true, invocationId: "e-1" });
  expect(rows.messages.map((message) => message.role)).toEqual(["tool", "user"]);
});
