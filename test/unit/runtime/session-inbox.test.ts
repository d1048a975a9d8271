/**
 * SessionInbox: a message is committed before it is queued and announced; a repeated idempotency
 * key writes nothing; past the caps nothing is written; a closed inbox answers 404, also to an
 * inject whose row was committing when it closed; what an execution could not start waits again
 * ahead of what came since.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LiveFrame } from "../../../src/core/events.ts";
import { SessionInbox } from "../../../src/runtime/session-inbox.ts";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";

const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterAll(async () => {
  for (const store of stores) await store.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const KEY = { app: "spar", id: "s1" };

async function setup(caps = { maxMessages: 10, maxBytes: 1000 }) {
  const dir = mkdtempSync(join(tmpdir(), "spar-inbox-"));
  dirs.push(dir);
  const store = SqliteStore.open(join(dir, "sessions.db"));
  stores.push(store);
  await store.createSession({
    ...KEY,
    owner: "local",
    viewers: [],
    contributors: [],
    createdAt: "2026-01-01T00:00:00Z",
    lastTouchedAt: "0001-01-01T00:00:00Z",
  });
  const frames: LiveFrame[] = [];
  const inbox = new SessionInbox([], {
    key: KEY,
    context: { store, now: () => new Date("2026-01-02T00:00:00Z"), inboxCaps: caps },
    journal: { frame: (frame) => frames.push(frame) },
  });
  return { inbox, store, frames };
}

test("a message is committed, then queued and announced; it wakes only when asked to", async () => {
  const { inbox, store, frames } = await setup();
  const quiet = await inbox.enqueue("later", false, {});
  expect(inbox.due).toBe(false);
  const woken = await inbox.enqueue("now", true, {});
  expect(inbox.due).toBe(true);
  expect((await store.pendingInbox(KEY)).map((item) => item.promptId)).toEqual([quiet.promptId, woken.promptId]);
  expect(frames).toEqual([
    { type: "inbox", state: "queued", promptId: quiet.promptId, queuedAt: "2026-01-02T00:00:00.000Z" },
    { type: "inbox", state: "queued", promptId: woken.promptId, queuedAt: "2026-01-02T00:00:00.000Z" },
  ]);
});

test("a repeated idempotency key is a duplicate, waiting or drained: nothing written or announced again", async () => {
  const { inbox, store, frames } = await setup();
  const first = await inbox.enqueue("once", true, { idempotencyKey: "k-1" });
  expect(await inbox.enqueue("once", true, { idempotencyKey: "k-1" })).toEqual({
    promptId: first.promptId,
    duplicate: true,
  });
  inbox.take();
  const prompt = { id: "r1", ts: "2026-01-02T00:00:01Z", invocationId: "e-1", author: "user" };
  await store.append(KEY, [{ ...prompt, kind: "user-message", text: "once", promptIds: [first.promptId] }], {
    drainedPromptIds: [first.promptId],
  });
  expect(await inbox.enqueue("once", true, { idempotencyKey: "k-1" })).toEqual({
    promptId: first.promptId,
    duplicate: true,
  });
  expect(frames).toHaveLength(1);
});

test("past the caps a message is refused before anything is written; the operator's uncapped steer is not", async () => {
  const { inbox, store } = await setup({ maxMessages: 1, maxBytes: 1000 });
  await inbox.enqueue("one", true, {});
  await expect(inbox.enqueue("two", true, {})).rejects.toMatchObject({ code: "too_many_requests" });
  expect(await store.pendingInbox(KEY)).toHaveLength(1);
  await inbox.enqueue("steer", true, { capped: false });
  expect(inbox.items.map((item) => item.message)).toEqual(["one", "steer"]);
});

test("a closed inbox answers 404, also to an inject that was committing when it closed", async () => {
  const { inbox, frames } = await setup();
  const committing = inbox.enqueue("racing", true, {});
  inbox.close();
  await expect(committing).rejects.toMatchObject({ code: "not_found" });
  expect(() => inbox.refuseIfClosed()).toThrow("session not found: s1");
  expect(inbox.items).toEqual([]);
  expect(frames).toEqual([]);
});

test("take hands over the items and the bare wake; what could not start waits again ahead of later messages", async () => {
  const { inbox } = await setup();
  await inbox.enqueue("first", true, {});
  inbox.wakeBare();
  const taken = inbox.take();
  expect(taken.bare).toBe(true);
  expect(inbox.empty).toBe(true);
  await inbox.enqueue("second", true, {});
  inbox.giveBack(taken.items);
  expect(inbox.items.map((item) => item.message)).toEqual(["first", "second"]);
  expect(inbox.empty).toBe(false);
});
