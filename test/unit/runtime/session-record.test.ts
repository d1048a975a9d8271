/**
 * SessionRecordKeeper: the title comes from the first non-empty prompt and never changes after,
 * last_touched_at and the title are written through, and a store that refuses is logged while
 * the session keeps the value in memory.
 */
import { expect, test } from "bun:test";
import type { SessionKey } from "../../../src/core/session-key.ts";
import type { SessionRecord } from "../../../src/core/session-store.ts";
import { SessionRecordKeeper, cutTitle } from "../../../src/runtime/session-record.ts";

const record: SessionRecord = {
  app: "spar",
  id: "s1",
  owner: "local",
  viewers: [],
  contributors: [],
  createdAt: "2026-11-24T00:00:00.000Z",
  lastTouchedAt: "0001-01-01T00:00:00Z",
};

function keeper(refuse = false) {
  const writes: string[] = [];
  const errors: string[] = [];
  const store = {
    touchSession: async (key: SessionKey, at: string) => {
      if (refuse) throw new Error("disk full");
      writes.push(`touch ${key.id} ${at}`);
    },
    setTitle: async (key: SessionKey, title: string | undefined) => {
      if (refuse) throw new Error("disk full");
      writes.push(`title ${key.id} ${title}`);
    },
  };
  const now = new Date("2026-11-24T12:00:00.000Z");
  return {
    writes,
    errors,
    keeper: new SessionRecordKeeper(record, { store, now: () => now, logError: (message) => errors.push(message) }),
  };
}

test("the first non-empty prompt names the session, once; the title is written through", async () => {
  const { keeper: k, writes } = keeper();
  k.nameFrom("");
  expect(k.record.title).toBeUndefined();
  k.nameFrom("  why is   billing down?  ");
  k.nameFrom("a later prompt");
  await Bun.sleep(0);
  expect(k.record.title).toBe("why is billing down?");
  expect(writes).toEqual(["title s1 why is billing down?"]);
});

test("persistTouch records last_touched_at in memory and in the store; touch moves only the activity clock", async () => {
  const { keeper: k, writes } = keeper();
  const before = k.lastActivity;
  await Bun.sleep(2); // time under test: the activity clock moves on
  k.touch();
  expect(k.lastActivity).toBeGreaterThan(before);
  expect(writes).toEqual([]);
  k.persistTouch();
  await Bun.sleep(0);
  expect(k.record.lastTouchedAt).toBe("2026-11-24T12:00:00.000Z");
  expect(writes).toEqual(["touch s1 2026-11-24T12:00:00.000Z"]);
  k.adoptAcl(["ann"], ["bob"]);
  expect(k.record).toMatchObject({
    owner: "local",
    viewers: ["ann"],
    contributors: ["bob"],
    lastTouchedAt: "2026-11-24T12:00:00.000Z",
  });
});

test("a store that refuses the writes is logged; the session keeps the values", async () => {
  const { keeper: k, errors } = keeper(true);
  k.nameFrom("first prompt");
  k.persistTouch();
  await Bun.sleep(0);
  expect(k.record).toMatchObject({ title: "first prompt", lastTouchedAt: "2026-11-24T12:00:00.000Z" });
  expect(errors).toEqual([
    "session s1: title not persisted: Error: disk full",
    "session s1: last_touched_at not persisted: Error: disk full",
  ]);
});

test("POST /title (D359): trimmed and cut to 60 runes, written through; a refused write answers persisted false with detail", async () => {
  const ok = keeper();
  expect(await ok.keeper.setTitle("  Release 2.0  ")).toEqual({ title: "Release 2.0", persisted: true });
  expect(ok.keeper.record.title).toBe("Release 2.0");
  // The operator's title stays: a prompt does not rename the session.
  ok.keeper.nameFrom("a later prompt");
  expect(ok.keeper.record.title).toBe("Release 2.0");
  expect(cutTitle(`${"é".repeat(59)}  ab`)).toBe(`${"é".repeat(59)}`);
  expect(cutTitle("🚀".repeat(61))).toBe("🚀".repeat(60));
  expect(await ok.keeper.setTitle("   ")).toEqual({ persisted: true });
  expect(ok.keeper.record.title).toBeUndefined();
  expect(ok.writes).toEqual(["title s1 Release 2.0", "title s1 undefined"]);
  // Cleared: the next prompt names the session again.
  ok.keeper.nameFrom("the next prompt");
  expect(ok.keeper.record.title).toBe("the next prompt");

  const refused = keeper(true);
  const answer = await refused.keeper.setTitle("Named");
  expect(answer).toMatchObject({ title: "Named", persisted: false });
  expect(answer.detail).toContain("disk full");
  expect(refused.keeper.record.title).toBe("Named");
  expect(refused.errors.some((message) => message.includes("title not persisted"))).toBe(true);
});
