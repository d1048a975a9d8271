/**
 * The dispatcher's lanes (D450): order within a lane, other lanes beside a slow one, the
 * concurrency bound, a busy lane taking its turn after the waiting ones, both queue bounds
 * refusing with LaneFull (and running nothing), delayed items counted, idle.
 */
import { describe, expect, test } from "bun:test";
import { DispatchLanes, LaneFull } from "../../../src/watcher/dispatch-lanes.ts";

function gate() {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

const SETTINGS = { concurrency: 2, perLane: 3, total: 5, delayedAfterMs: 1000 };

describe("dispatch lanes", () => {
  test("one lane runs in order, one item at a time; a slow lane holds only itself", async () => {
    const lanes = new DispatchLanes(SETTINGS);
    const ran: string[] = [];
    const slow = gate();
    const first = lanes.run("a", async () => {
      ran.push("a1 start");
      await slow.opened;
      ran.push("a1 end");
    });
    const second = lanes.run("a", async () => {
      ran.push("a2");
    });
    await lanes.run("b", async () => {
      ran.push("b1");
    });
    // b ran while a's first item was still at work, and a's second had not started.
    expect(ran).toEqual(["a1 start", "b1"]);
    expect(lanes.busy("a")).toBe(true);
    slow.open();
    await Promise.all([first, second]);
    expect(ran).toEqual(["a1 start", "b1", "a1 end", "a2"]);
    expect(lanes.busy("a")).toBe(false);
  });

  test("at most `concurrency` lanes work at once; a busy lane waits behind the lanes already waiting", async () => {
    const lanes = new DispatchLanes({ ...SETTINGS, perLane: 10, total: 10 });
    const started: string[] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    const item = (name: string) => {
      const held = gate();
      gates.set(name, held);
      return lanes.run(name.slice(0, 1), async () => {
        started.push(name);
        await held.opened;
      });
    };
    const all = [item("a1"), item("a2"), item("b1"), item("c1")];
    expect(started).toEqual(["a1", "b1"]);
    expect(lanes.active).toBe(2);
    expect(lanes.queued).toBe(2);
    gates.get("a1")?.open();
    await Bun.sleep(0); // poll: let the finished item's continuation run.
    // a's next item waits behind c, which was waiting first.
    expect(started).toEqual(["a1", "b1", "c1"]);
    gates.get("b1")?.open();
    await Bun.sleep(0); // poll: as above.
    expect(started).toEqual(["a1", "b1", "c1", "a2"]);
    for (const held of gates.values()) held.open();
    await Promise.all(all);
    await lanes.idle();
    expect(lanes.active).toBe(0);
  });

  test("a full lane and a full queue refuse with LaneFull and never run the work; unbounded work still runs", async () => {
    const lanes = new DispatchLanes({ ...SETTINGS, concurrency: 1 });
    const held = gate();
    const runs: string[] = [];
    const work = (name: string) => async () => {
      runs.push(name);
      await held.opened;
    };
    const accepted = [lanes.run("a", work("a0"))];
    for (let index = 1; index <= 3; index++) accepted.push(lanes.run("a", work(`a${index}`)));
    const laneFull = await lanes.run("a", work("a4")).catch((error) => error);
    expect(laneFull).toBeInstanceOf(LaneFull);
    expect((laneFull as LaneFull).bound).toBe("lane");
    accepted.push(lanes.run("b", work("b1")), lanes.run("c", work("c1")));
    const totalFull = await lanes.run("d", work("d1")).catch((error) => error);
    expect((totalFull as LaneFull).bound).toBe("total");
    accepted.push(lanes.run("a", work("a-binding"), false));
    held.open();
    await Promise.all(accepted);
    expect(runs).not.toContain("a4");
    expect(runs).not.toContain("d1");
    expect(runs).toContain("a-binding");
    expect(runs.filter((name) => name.startsWith("a"))).toEqual(["a0", "a1", "a2", "a3", "a-binding"]);
  });

  test("an item that waited past delayedAfterMs is counted as delayed; a failing item rejects only itself", async () => {
    let clock = 0;
    let delayed = 0;
    const lanes = new DispatchLanes({ ...SETTINGS, concurrency: 1 }, { delayed: () => delayed++ }, () => clock);
    const held = gate();
    const first = lanes.run("a", () => held.opened);
    const failing = lanes.run("b", async () => {
      throw new Error("boom");
    });
    const late = lanes.run("c", async () => "c done");
    clock = 1500;
    held.open();
    await first;
    expect(await failing.catch((error: Error) => error.message)).toBe("boom");
    expect(await late).toBe("c done");
    expect(delayed).toBe(2);
    await lanes.idle();
  });
});
