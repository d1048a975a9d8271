/**
 * SessionService over a real SessionHost (sqlite store, one turn worker): the ACL decides at
 * every operation (a session a caller may not act on is missing), a taken id is a 409 only to
 * those who can see the session, and a draining daemon refuses work before it is authorized.
 */
import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { SparError } from "../../../src/core/errors.ts";
import { SessionService } from "../../../src/runtime/session-service.ts";
import { type InProcessApp, inProcessApp } from "../../support/attach-app.ts";

let app: InProcessApp;
let service: SessionService;
const alice = { identity: "alice", admin: false };
const bob = { identity: "bob", admin: false };
const root = { identity: "root", admin: true };

async function codeOf(work: Promise<unknown>): Promise<string> {
  try {
    await work;
    return "ok";
  } catch (error) {
    if (error instanceof SparError) return `${error.code}: ${error.message}`;
    throw error;
  }
}

beforeAll(async () => {
  app = await inProcessApp();
  service = new SessionService(app.host);
  await service.create(alice, { sessionID: "alices", viewers: ["vic"], contributors: [] });
});
afterAll(async () => {
  await app.close();
});

describe("authorization", () => {
  test("the owner, a viewer and an admin reach the session at their level; a stranger finds nothing", async () => {
    expect((await service.open({ app: undefined, sid: "alices" }, alice, "admin")).key).toEqual({
      app: "spar",
      id: "alices",
    });
    expect(
      await codeOf(service.open({ app: undefined, sid: "alices" }, { identity: "vic", admin: false }, "read")),
    ).toBe("ok");
    expect(
      await codeOf(service.open({ app: undefined, sid: "alices" }, { identity: "vic", admin: false }, "write")),
    ).toBe("not_found: session not found: alices");
    expect(await codeOf(service.open({ app: "spar", sid: "alices" }, root, "admin"))).toBe("ok");
    expect(await codeOf(service.inject({ app: undefined, sid: "alices" }, bob, "hi", { wake: false }))).toBe(
      "not_found: session not found: alices",
    );
  });

  test("a taken id is a conflict to whoever can see it and missing to anyone else", async () => {
    expect(await codeOf(service.create(alice, { sessionID: "alices", viewers: [], contributors: [] }))).toStartWith(
      "conflict",
    );
    expect(await codeOf(service.create(bob, { sessionID: "alices", viewers: [], contributors: [] }))).toBe(
      "not_found: session not found: spar/alices",
    );
  });

  test("an inject lands in the inbox and answers its prompt id", async () => {
    const { key, result } = await service.inject({ app: undefined, sid: "alices" }, alice, "queued", { wake: false });
    expect(key.id).toBe("alices");
    expect(result.woke).toBe(false);
    expect(result.promptId).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("creation", () => {
  test("a created session is live at once, built from its record: nothing is read back from the store", async () => {
    const store = app.host.store;
    const reads = [spyOn(store, "getSession"), spyOn(store, "pendingInbox"), spyOn(store, "read")];
    try {
      const record = await service.create(alice, { sessionID: "fresh", viewers: ["vic"], contributors: ["carol"] });
      expect(reads.map((spy) => spy.mock.calls.length)).toEqual([0, 0, 0]);
      const { actor } = await service.open({ app: undefined, sid: "fresh" }, alice, "read");
      expect(actor.record).toEqual(record);
      expect(actor.record.viewers).not.toBe(record.viewers);
      expect(actor.pendingCount).toBe(0);
      expect(reads.map((spy) => spy.mock.calls.length)).toEqual([0, 0, 0]);
    } finally {
      for (const spy of reads) spy.mockRestore();
    }
    // The session it built is the one a rebuild would: its first inject lands and is counted.
    await service.inject({ app: undefined, sid: "fresh" }, alice, "queued", { wake: false });
    expect((await service.open({ app: undefined, sid: "fresh" }, alice, "read")).actor.pendingCount).toBe(1);
  });

  test("exists answers from the daemon's index, with no ACL and no refusal", async () => {
    expect(service.exists({ app: "spar", id: "alices" })).toBe(true);
    expect(service.exists({ app: "spar", id: "nosuch" })).toBe(false);
    expect(service.exists({ app: "other", id: "alices" })).toBe(false);
  });
});

describe("draining", () => {
  test("inject, wake and resume are refused with shutting_down before the caller is even looked at", async () => {
    await app.host.beginShutdown();
    for (const work of [
      service.inject({ app: undefined, sid: "nosuch" }, bob, "x", { wake: true }),
      service.wake({ app: undefined, sid: "nosuch" }, bob, undefined),
      service.resume({ app: undefined, sid: "nosuch" }, bob, "continue", undefined),
    ]) {
      expect(await codeOf(work)).toStartWith("shutting_down");
    }
    expect(await codeOf(service.open({ app: undefined, sid: "alices" }, alice, "read"))).toBe("ok");
  });
});
