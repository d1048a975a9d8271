import { expect, test } from "bun:test";
import type { LiveFrame, SessionEvent } from "../../../src/core/events.ts";
import type { InboxItem } from "../../../src/core/session-store.ts";
import type { CancelCause } from "../../../src/runtime/executor.ts";
import { OperatorControls } from "../../../src/runtime/operator-controls.ts";

function setup(opts: { turn?: boolean; failAppend?: boolean; turnDone?: Promise<void> } = {}) {
  const frames: LiveFrame[] = [];
  const appended: { events: SessionEvent[]; drained: readonly string[] | undefined }[] = [];
  const injected: string[] = [];
  const cancels: [string, CancelCause][] = [];
  let scheduled = 0;
  let cleared = 0;
  let compactionsCancelled = 0;
  const pending: InboxItem[] = [];
  const controls = new OperatorControls({
    now: () => new Date("2024-01-01T00:00:00Z"),
    inFlight: () => (opts.turn ? "e-1" : undefined),
    cancel: (invocationId, cause) => cancels.push([invocationId, cause]),
    executionDone: () => opts.turnDone ?? Promise.resolve(),
    clearContinue: () => cleared++,
    cancelCompaction: () => compactionsCancelled++,
    pending,
    journal: {
      frame: (frame) => frames.push(frame),
      append: async (events, drained) => {
        if (opts.failAppend) throw new Error("store refused");
        appended.push({ events, drained });
        return events.map((event, index) => ({ seq: appended.length * 100 + index, event }));
      },
      header: (invocationId, author) => ({ id: "r", ts: "t", invocationId, author }),
    },
    inject: async (message) => {
      injected.push(message);
      return { promptId: "p", woke: true };
    },
    schedule: () => scheduled++,
  });
  return {
    controls,
    frames,
    appended,
    injected,
    cancels,
    pending,
    scheduled: () => scheduled,
    cleared: () => cleared,
    compactionsCancelled: () => compactionsCancelled,
  };
}

test("interrupt with hold parks, cancels the turn, and writes the audit row", async () => {
  const s = setup({ turn: true });
  expect(await s.controls.interrupt(true, "alice")).toEqual({ interrupted: true, paused: true });
  expect(s.cancels).toEqual([["e-1", "operator"]]);
  expect(s.cleared()).toBe(1);
  expect(s.frames).toEqual([
    { type: "pause", state: "paused", reason: "operator-interrupt", interrupted: true, at: "2024-01-01T00:00:00.000Z" },
  ]);
  expect(s.appended[0]?.events[0]).toMatchObject({
    name: "attach-interrupt",
    metadata: { source: "operator", hold: true, interrupted: true, caller: "alice" },
  });
});

test("interrupt with no turn does not park; it cancels a compaction that may be running", async () => {
  const s = setup();
  expect(await s.controls.interrupt(true, undefined)).toEqual({ interrupted: false, paused: false });
  expect(s.compactionsCancelled()).toBe(1);
  expect(s.frames).toEqual([]);
  expect(s.appended).toHaveLength(1);
});

test("pause transitions once; resume releases once", async () => {
  const s = setup();
  expect(s.controls.pause(undefined)).toEqual({ transitioned: true });
  expect(s.controls.pause("again")).toEqual({ transitioned: false });
  expect(s.controls.gate.reason).toBe("operator-pause");
  expect(await s.controls.resume("continue", undefined)).toEqual({ resumed: true });
  expect(await s.controls.resume("continue", undefined)).toEqual({ resumed: false });
  expect(s.scheduled()).toBe(1);
  expect(s.frames.map((f) => (f as { state?: string }).state)).toEqual(["paused", "resumed"]);
});

test("resume steer injects the steer text", async () => {
  const s = setup();
  s.controls.pause(undefined);
  await s.controls.resume("steer", "go left");
  expect(s.injected).toHaveLength(1);
  expect(s.injected[0]).toContain("go left");
});

test("resume abandon drops the queue and records it; a refused write restores it", async () => {
  const s = setup();
  s.pending.push({ promptId: "p1", message: "m", queuedAt: "t", wake: true });
  s.controls.pause(undefined);
  await s.controls.resume("abandon", undefined);
  expect(s.pending).toEqual([]);
  expect(s.appended[0]?.drained).toEqual(["p1"]);
  expect(s.appended[0]?.events[0]).toMatchObject({
    name: "attach-resume-abandon",
    metadata: { abandoned_prompt_ids: ["p1"] },
  });

  const f = setup({ failAppend: true });
  f.pending.push({ promptId: "p2", message: "m", queuedAt: "t", wake: true });
  f.controls.pause(undefined);
  await expect(f.controls.resume("abandon", undefined)).rejects.toThrow("store refused");
  expect(f.pending.map((i) => i.promptId)).toEqual(["p2"]);
});

test("a resume that lands while the interrupted turn unwinds wins: no stale paused frame after the resumed one", async () => {
  let unwound!: () => void;
  const s = setup({ turn: true, turnDone: new Promise<void>((resolve) => (unwound = resolve)) });
  const interrupting = s.controls.interrupt(true, undefined);
  expect(await s.controls.resume("continue", undefined)).toEqual({ resumed: true });
  unwound();
  expect(await interrupting).toEqual({ interrupted: true, paused: false });
  expect(s.frames.map((frame) => (frame.type === "pause" ? frame.state : frame.type))).toEqual(["resumed"]);
  expect(s.controls.gate.paused).toBe(false);
});

test("resume abandon also withdraws a continue turn waiting to run, even with nothing queued", async () => {
  const s = setup();
  s.controls.pause(undefined);
  expect(await s.controls.resume("abandon", undefined)).toEqual({ resumed: true });
  expect(s.cleared()).toBe(1);
  expect(s.appended).toEqual([]);
});
