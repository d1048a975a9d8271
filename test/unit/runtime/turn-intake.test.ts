import { expect, test } from "bun:test";
import type { LiveFrame, SessionEvent } from "../../../src/core/events.ts";
import type { ChatMessage } from "../../../src/core/model.ts";
import type { InboxItem } from "../../../src/core/session-store.ts";
import { ContinueOffers } from "../../../src/runtime/continue-offers.ts";
import type { ArmedContinue } from "../../../src/runtime/continue-slot.ts";
import { TurnIntake } from "../../../src/runtime/turn-intake.ts";
import type { TurnDeps } from "../../../src/runtime/turn-runner.ts";

const armed: ArmedContinue = { cause: "output-cap", interruption: "e-old", promptId: "p-continue", attempt: 1 };

function item(promptId: string, wake = true): InboxItem {
  return { promptId, message: `message ${promptId}`, queuedAt: "2024-01-01T00:00:00Z", wake };
}

function setup(opts: { halted?: boolean; failAppend?: boolean } = {}) {
  const refused: string[] = [];
  const errors: string[] = [];
  const appended: { events: SessionEvent[]; drained: readonly string[]; before: LiveFrame[] }[] = [];
  const history: ChatMessage[] = [];
  const halt = { guardrail: "cost", reason: "over budget" };
  const guards = {
    halted: opts.halted ? halt : undefined,
    preflight: async () => (opts.halted ? halt : undefined),
    framePrompt: (text: string) => text,
    beginTurn: (invocationId: string) => ({ invocationId }),
  };
  const context = { model: { name: "fake-model" }, logError: (message: string) => errors.push(message), turnRefused: (guardrail: string) => refused.push(guardrail) };
  const session = {
    context,
    history,
    guards,
    header: (invocationId: string, author: string) => ({ id: "r", ts: "t", invocationId, author }),
  } as unknown as TurnDeps;
  const continues = new ContinueOffers({} as never, []);
  const pending: InboxItem[] = [];
  const intake = new TurnIntake(
    {
      key: { app: "a", id: "s" },
      session,
      continues,
      append: async (events, drained, before) => {
        if (opts.failAppend) throw new Error("store refused");
        appended.push({ events, drained, before });
      },
    },
    pending,
  );
  return { intake, pending, continues, refused, errors, appended, history };
}

test("due and empty follow the inbox, a bare wake and the continue slot", () => {
  const s = setup();
  expect(s.intake.due).toBe(false);
  expect(s.intake.empty).toBe(true);
  s.pending.push(item("p1", false));
  expect(s.intake.due).toBe(false);
  expect(s.intake.humanWaiting).toBe(false);
  expect(s.intake.empty).toBe(false);
  s.pending.push(item("p2"));
  expect(s.intake.due).toBe(true);
  expect(s.intake.humanWaiting).toBe(true);
  s.pending.splice(0);
  s.intake.wakeBare();
  expect(s.intake.due).toBe(true);
  expect(s.intake.empty).toBe(false);
});

test("a halted session refuses the turn: the inbox is kept, the bare wake and the continue turn dropped", async () => {
  const s = setup({ halted: true });
  s.pending.push(item("p1"));
  s.intake.wakeBare();
  s.continues.slot.arm(armed, 0, () => {});
  expect(await s.intake.prepare()).toBeUndefined();
  expect(s.refused).toEqual(["cost"]);
  expect(s.pending).toHaveLength(1);
  expect(s.continues.slot.occupied).toBe(false);
  s.pending.splice(0);
  expect(s.intake.empty).toBe(true);
});

test("a human message supersedes an armed continue turn, and the turn takes its prompt id", async () => {
  const s = setup();
  s.pending.push(item("p1"), item("p2", false));
  s.continues.slot.arm(armed, 0, () => {});
  const prepared = await s.intake.prepare();
  expect(prepared?.items.map((taken) => taken.promptId)).toEqual(["p1", "p2"]);
  expect(prepared?.armed).toBeUndefined();
  expect(prepared?.turn.promptId).toBe("p1");
  expect(s.pending).toHaveLength(0);
  expect(s.continues.slot.occupied).toBe(false);
});

test("nothing to take: no turn", async () => {
  const s = setup();
  expect(await s.intake.prepare()).toBeUndefined();
});

test("start commits the prompt row draining the inbox, and adds it to the conversation", async () => {
  const s = setup();
  s.pending.push(item("p1"));
  const prepared = await s.intake.prepare();
  if (!prepared) throw new Error("expected a turn");
  expect(await s.intake.start(prepared)).toBe("message p1");
  expect(s.appended[0]?.drained).toEqual(["p1"]);
  expect(s.appended[0]?.events.at(-1)).toMatchObject({ kind: "user-message", promptIds: ["p1"] });
  expect(s.history).toHaveLength(1);
});

test("a refused start puts the messages back at the head of the inbox", async () => {
  const s = setup({ failAppend: true });
  s.pending.push(item("p1"));
  const prepared = await s.intake.prepare();
  if (!prepared) throw new Error("expected a turn");
  s.pending.push(item("p2"));
  expect(await s.intake.start(prepared)).toBeUndefined();
  expect(s.pending.map((queued) => queued.promptId)).toEqual(["p1", "p2"]);
  expect(s.history).toHaveLength(0);
  expect(s.errors[0]).toContain("could not start a turn");
});
