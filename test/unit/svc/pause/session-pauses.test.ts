/**
 * SessionPauses with its runtime answered in memory: tokens are minted once and kept as digests,
 * consumed once (a replay is a no-op), refused when expired or replaced, extended; an aborted
 * incident refuses turns and voids its tokens; `pauseForStop` (for `svc stop --pause-sessions`)
 * pauses each session it is given and says why one could not be.
 */
import { expect, test } from "bun:test";
import { SparError } from "../../../../src/core/errors.ts";
import type { SessionEvent } from "../../../../src/core/events.ts";
import type { Journal } from "../../../../src/runtime/session-journal.ts";
import { foldPauses } from "../../../../src/svc/pause/pause-ledger.ts";
import { type PauseDeps, SessionPauses, pauseForStop } from "../../../../src/svc/pause/session-pauses.ts";
import type { Caller } from "../../../../src/surfaces/http/caller-auth.ts";

const OPERATOR: Caller = Object.freeze({ identity: "svc-inject", admin: false, source: "bearer" });

function setup(known: string[] = ["incident-a", "incident-b"]) {
  const rows = new Map<string, SessionEvent[]>();
  let now = Date.parse("2026-01-01T00:00:00Z");
  const woken: string[] = [];
  const journal = (sessionId: string): Journal => ({
    header: (invocationId, author) => ({
      id: crypto.randomUUID(),
      ts: new Date(now).toISOString(),
      invocationId,
      author,
    }),
    append: async (events) => {
      rows.set(sessionId, [...(rows.get(sessionId) ?? []), ...events]);
      return [];
    },
    frame: () => {},
  });
  const deps: PauseDeps = {
    coordinatorApp: "svc",
    authorize: async (sessionId) => {
      if (!known.includes(sessionId)) throw new SparError("not_found", `session not found: ${sessionId}`);
    },
    journalOf: async (sessionId) => journal(sessionId),
    abortOf: async () => undefined,
    interruptIncident: async () => {},
    wake: async (sessionId) => {
      woken.push(sessionId);
    },
    ackEffects: async () => 2,
    now: () => new Date(now),
    logError: () => {},
  };
  return { pauses: new SessionPauses(deps), rows, woken, advance: (ms: number) => (now += ms) };
}

test("a token resumes once; its replay is a no-op; the rows hold its digest, never the token", async () => {
  const { pauses, rows, woken } = setup();
  const answer = await pauses.pause({
    sessionId: "incident-a",
    reason: "operator",
    interrupt: false,
    caller: OPERATOR,
  });
  expect(pauses.refusal("incident-a")?.message).toContain("is gate-paused (operator)");
  expect(JSON.stringify(rows.get("incident-a"))).not.toContain(answer.token);
  expect(await pauses.resumeByToken({ token: answer.token, ackEffects: true, caller: OPERATOR })).toEqual({
    session_id: "incident-a",
    replay: false,
    acknowledged: 2,
  });
  expect(pauses.refusal("incident-a")).toBeUndefined();
  expect(woken).toEqual(["incident-a"]);
  expect(await pauses.resumeByToken({ token: answer.token, ackEffects: false, caller: OPERATOR })).toEqual({
    session_id: "incident-a",
    replay: true,
  });
  expect(foldPauses(rows.get("incident-a") ?? []).tokens.get(answer.token)).toBeUndefined();
  expect(rows.get("incident-a")?.length).toBe(2);
});

test("expired: 409 and the pause stays; extend then resume; a ttl over 168h is 400", async () => {
  const { pauses, advance } = setup();
  const { token } = await pauses.pause({
    sessionId: "incident-a",
    reason: "other",
    ttlMs: 1000,
    interrupt: false,
    caller: OPERATOR,
  });
  advance(2000);
  await expect(pauses.resumeByToken({ token, ackEffects: false, caller: OPERATOR })).rejects.toThrow(
    /resume token expired/,
  );
  expect(pauses.active("incident-a")).toBeDefined();
  await expect(pauses.extend(token, 169 * 3_600_000, OPERATOR)).rejects.toThrow(/at most 168h/);
  await pauses.extend(token, 3_600_000, OPERATOR);
  expect((await pauses.resumeByToken({ token, ackEffects: false, caller: OPERATOR })).replay).toBe(false);
});

test("an aborted incident refuses turns with the abort and its tokens are void", async () => {
  const { pauses } = setup();
  const { token } = await pauses.pause({
    sessionId: "incident-a",
    reason: "operator",
    interrupt: false,
    caller: OPERATOR,
  });
  pauses.voidPauses("incident-a", { reason: "bad", at: "2026-01-01T00:00:00Z", by: "op" });
  expect(pauses.refusal("incident-a")?.message).toBe('session "incident-a" is aborted (bad)');
  await expect(pauses.resumeByToken({ token, ackEffects: false, caller: OPERATOR })).rejects.toThrow(/aborted/);
});

test("pauseForStop pauses each session (reason operator, the stop's reason as its message) and names the ones it could not", async () => {
  const { pauses } = setup();
  const results = await pauseForStop(pauses, ["incident-a", "incident-none"], "rollout", OPERATOR);
  expect(results[0]?.answer).toMatchObject({ session_id: "incident-a", reason: "operator" });
  expect(pauses.active("incident-a")?.message).toBe("svc stop: rollout");
  expect(results[1]).toEqual({ sessionId: "incident-none", error: "session not found: incident-none" });
});
