import { expect, test } from "bun:test";
import type { ContinueAsk } from "../../../src/runtime/auto-continuer.ts";
import { ContinueOffers } from "../../../src/runtime/continue-offers.ts";

function setup(approve = true) {
  const asks: ContinueAsk[] = [];
  const frames: unknown[] = [];
  let scheduled = 0;
  const continuer = {
    settings: { enabled: true, backoffMs: 1000 },
    approve: async (ask: ContinueAsk) => {
      asks.push(ask);
      return approve;
    },
  };
  const offers = new ContinueOffers(
    {
      key: { app: "a", id: "s" },
      context: { autoContinue: continuer as never, now: () => new Date("2024-01-01T00:00:00Z"), logError: () => {} },
      retired: () => false,
      halted: () => false,
      turnInFlight: () => "t1",
      journal: { frame: (frame) => frames.push(frame) },
      schedule: () => scheduled++,
    },
    [],
  );
  return { offers, asks, frames, scheduled: () => scheduled };
}

test("an output-cap cut is offered at once and, when approved, armed and scheduled", async () => {
  const { offers, asks, frames, scheduled } = setup();
  offers.afterTurn("t1", { status: "completed", finishReason: "length" });
  await Bun.sleep(0);
  expect(asks).toHaveLength(1);
  expect(asks[0]).toMatchObject({ cause: "output-cap", interruption: "t1", sequence: 0, turnInFlight: false });
  expect(frames).toHaveLength(1);
  expect(scheduled()).toBe(1);
  expect(offers.slot.take()).toMatchObject({ cause: "output-cap", interruption: "t1", attempt: 1 });
});

test("a clean or operator-ended turn is not offered; a refused offer arms nothing", async () => {
  const { offers, asks } = setup();
  offers.afterTurn("t1", { status: "completed", finishReason: "stop" });
  offers.afterTurn("t1", { status: "canceled" });
  await Bun.sleep(0);
  expect(asks).toHaveLength(0);
  const refused = setup(false);
  refused.offers.afterTurn("t1", { status: "failed", error: { kind: "rate_limited" } as never });
  await Bun.sleep(0);
  expect(refused.asks).toHaveLength(1);
  expect(refused.offers.slot.occupied).toBe(false);
});

test("the sequence grows with continue turns and resets on any other turn", async () => {
  const { offers, asks } = setup();
  offers.started({ cause: "transient", interruption: "t0", promptId: "p", attempt: 1 });
  offers.started({ cause: "transient", interruption: "t0", promptId: "p", attempt: 2 });
  offers.afterTurn("t1", { status: "completed", finishReason: "length" });
  offers.started(undefined);
  offers.afterTurn("t1", { status: "completed", finishReason: "length" });
  await Bun.sleep(0);
  expect(asks.map((ask) => ask.sequence)).toEqual([2, 0]);
  offers.slot.clear();
});

test("no restart cut in the rows: nothing is offered", async () => {
  const { offers, asks } = setup();
  await offers.offerRestart(false);
  expect(asks).toHaveLength(0);
});

test("the next turn takes the armed continue turn, unless human messages wait: then it is withdrawn as dequeued", async () => {
  const { offers, frames } = setup();
  offers.afterTurn("t1", { status: "completed", finishReason: "length" });
  await Bun.sleep(0);
  expect(offers.forNextTurn(false)).toMatchObject({ cause: "output-cap", interruption: "t1" });
  expect(offers.slot.occupied).toBe(false);

  offers.afterTurn("t2", { status: "completed", finishReason: "length" });
  await Bun.sleep(0);
  frames.length = 0;
  expect(offers.forNextTurn(true)).toBeUndefined();
  expect(offers.slot.occupied).toBe(false);
  expect(frames).toEqual([expect.objectContaining({ type: "inbox", state: "dequeued", withdrawn: true })]);
});
