/**
 * Abort in the runtime core, over a real SessionHost (sqlite store, one turn worker): terminal for
 * every turn kind the attach surface starts (inject, wake, a resume's steer), the marker on the
 * session's record (also after the actor is evicted and rebuilt), a second abort a conflict, and
 * the ACL deciding who may abort (a viewer finds nothing).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SparError } from "../../../src/core/errors.ts";
import { SessionService } from "../../../src/runtime/session-service.ts";
import { type InProcessApp, inProcessApp } from "../../support/attach-app.ts";

let app: InProcessApp;
let service: SessionService;
const alice = { identity: "alice", admin: false };
const vic = { identity: "vic", admin: false };
const target = { app: undefined, sid: "doomed" };

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
  // The attach route's caller is alice, the session's owner.
  app = await inProcessApp({ caller: () => ({ identity: "alice", admin: false, source: "bearer" }) });
  service = new SessionService(app.host);
  await service.create(alice, { sessionID: "doomed", viewers: ["vic"], contributors: [] });
});
afterAll(async () => {
  await app.close();
});

test("a viewer may not abort (masked 404); the owner aborts; a second abort is a conflict", async () => {
  expect(await codeOf(service.abort(target, vic, "no"))).toBe("not_found: session not found: doomed");
  const { abort } = await service.abort(target, alice, "bad rollout");
  expect(abort).toMatchObject({ reason: "bad rollout", by: "alice" });
  expect((await app.host.store.getSession({ app: "spar", id: "doomed" }))?.abort).toEqual(abort);
  expect(await codeOf(service.abort(target, alice, "again"))).toBe(
    'conflict: session "doomed": session already aborted',
  );
  expect(await codeOf(service.abort({ app: undefined, sid: "nope" }, alice, "x"))).toBe(
    "not_found: session not found: nope",
  );
});

test("every turn kind is refused 409 naming the abort: inject, wake, a resume's steer, the attach route", async () => {
  const refusal = 'conflict: session "doomed" is aborted (bad rollout)';
  expect(await codeOf(service.inject(target, alice, "hi", { wake: true }))).toBe(refusal);
  expect(await codeOf(service.wake(target, alice, undefined))).toBe(refusal);
  await service.pause(target, alice, "hold");
  expect(await codeOf(service.resume(target, alice, "steer", "go on"))).toBe(refusal);
  const response = await app.app.handle(
    new Request("http://127.0.0.1/sessions/doomed/inject", {
      method: "POST",
      headers: { host: "127.0.0.1", "content-type": "application/json" },
      body: '{"message":"hi"}',
    }),
  );
  expect(response.status).toBe(409);
  expect(await response.json()).toMatchObject({ error: 'session "doomed" is aborted (bad rollout)' });
  expect(await app.host.store.pendingInbox({ app: "spar", id: "doomed" })).toEqual([]);
});

test("an evicted actor is rebuilt aborted from its record", async () => {
  expect(app.host.evictIdle(Date.now() + 3_600_000)).toBeGreaterThan(0);
  const { actor } = await service.open(target, alice, "read");
  expect(actor.record.abort?.reason).toBe("bad rollout");
  expect(await codeOf(service.inject(target, alice, "hi", { wake: true }))).toBe(
    'conflict: session "doomed" is aborted (bad rollout)',
  );
});
