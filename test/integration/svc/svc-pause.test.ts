/**
 * Gate pauses and resume tokens against the real `spar svc` over HTTP (spec: States and
 * transitions, Resume token): a pause mints an `mrt_` token and refuses every later turn kind; the
 * pause and its digest (never the token) survive kill -9 and a restart; the token resumes once and
 * a replay changes nothing; an expired token leaves the pause in place until `extend-token`; a
 * timed pause resumes by itself after a restart; a second pause replaces the first's token;
 * `interrupt` cancels the turn in flight. What the store keeps (the pause across a restart, the
 * token's digest, its expiry and extension, the timer's resume) runs on sqlite and on PostgreSQL
 * (D519); the rest on sqlite.
 */
import { describe, expect, test } from "bun:test";
import { type Daemon, postJson, waitFor } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { say, stall, writeScript } from "../../support/scripted.ts";
import { type SvcStore, sqliteSvcStore, svcStores } from "../../support/svc-store.ts";

const scope = daemonScope();

/** A scripted svc on `store`: on `sessionDb` (a restart), else on a fresh store. */
function svcOn(store: SvcStore, lines: readonly unknown[], sessionDb?: string) {
  const flags = store.flags(sessionDb);
  return scope.start({
    role: "svc",
    args: [...flags.args, "--model=scripted"],
    env: { SVC_SCRIPT: writeScript(lines) },
    ...(flags.sessionDb === undefined ? {} : { sessionDb: flags.sessionDb }),
  });
}
const svc = (lines: readonly unknown[]) => svcOn(sqliteSvcStore, lines);

async function post(daemon: Daemon, path: string, body: unknown) {
  const response = await postJson(`${daemon.baseUrl}${path}`, body);
  expect(response.headers.get("content-type")).toContain("application/json");
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const inject = (daemon: Daemon, uid: string) => post(daemon, "/inject", { uid });
const resumeWith = (daemon: Daemon, token: unknown, extra: Record<string, unknown> = {}) =>
  post(daemon, "/resume", { token, ...extra });

async function paused(daemon: Daemon, body: Record<string, unknown>): Promise<string> {
  const answer = await post(daemon, "/pause", body);
  expect(answer.status).toBe(200);
  const token = String(answer.body.token);
  expect(token).toMatch(/^mrt_[A-Za-z0-9_-]{22}$/);
  return token;
}

const GATE_PAUSED = 'session "incident-p1" is gate-paused (operator: uat gate); session_paused';

test("a second pause replaces the first's token: the old one is refused naming why, the new one resumes", async () => {
  const daemon = await svc([say("one"), say("two")]);
  expect((await inject(daemon, "p1")).status).toBe(202);
  const old = await paused(daemon, { session_id: "incident-p1", reason: "operator" });
  const again = await post(daemon, "/pause", { session_id: "incident-p1", reason: "ambiguity", message: "look first" });
  expect(again.body).toMatchObject({ reason: "ambiguity", replaced: true });
  expect(again.body.token).not.toBe(old);
  const refused = await resumeWith(daemon, old);
  expect(refused.status).toBe(409);
  expect(String(refused.body.error)).toContain("resume token replaced by a later pause");
  expect((await inject(daemon, "p1")).body.error).toContain("gate-paused (ambiguity: look first)");
  expect((await resumeWith(daemon, again.body.token)).status).toBe(202);
  expect((await inject(daemon, "p1")).status).toBe(202);
}, 30_000);

test("interrupt cancels the turn in flight: the waiting inject is 409 gate-paused; unknown session 404, unknown token 404, a response 400", async () => {
  const daemon = await svc([stall("working", 20_000), say("after")]);
  const waiting = inject(daemon, "p1");
  await waitFor(
    async () => {
      const text = await (await fetch(`${daemon.baseUrl}/metrics`)).text();
      return /svc_store_event_rows [1-9]/.test(text) ? true : undefined;
    },
    10_000,
    "a turn in flight",
  );
  const started = Date.now();
  const token = await paused(daemon, {
    session_id: "incident-p1",
    reason: "operator",
    message: "uat gate",
    interrupt: true,
  });
  expect(Date.now() - started).toBeLessThan(10_000);
  expect(await waiting).toMatchObject({ status: 409, body: { error: expect.stringContaining(GATE_PAUSED) } });
  expect((await post(daemon, "/pause", { session_id: "incident-none", reason: "operator" })).status).toBe(404);
  expect((await resumeWith(daemon, "mrt_AAAAAAAAAAAAAAAAAAAAAA")).status).toBe(404);
  expect((await resumeWith(daemon, "not-a-token")).status).toBe(404);
  const withResponse = await resumeWith(daemon, token, { response: { verdict: "approve" } });
  expect(withResponse.status).toBe(400);
  expect((await resumeWith(daemon, token)).status).toBe(202);
  expect((await inject(daemon, "p1")).status).toBe(202);
}, 40_000);

/** The scenarios whose promise the store keeps, on one engine. */
function storeScenarios(store: SvcStore): void {
  test("pause, kill -9, restart, resume with the token once: the pause holds across the restart, a replay is a no-op", async () => {
    const first = await svcOn(store, [say("one"), say("two")]);
    expect((await inject(first, "p1")).status).toBe(202);
    const token = await paused(first, { session_id: "incident-p1", reason: "operator", message: "uat gate" });
    expect(await inject(first, "p1")).toMatchObject({
      status: 409,
      body: { error: expect.stringContaining(GATE_PAUSED) },
    });
    await first.kill9();

    // The store keeps the token's digest, never the token (every file of a sqlite store, WAL
    // included; every row of a database).
    expect(await store.holds(first.sessionDb, token)).toBe(false);
    // The same look finds what the store does keep.
    expect(await store.holds(first.sessionDb, "uat gate")).toBe(true);

    const second = await svcOn(store, [say("two")], first.sessionDb);
    expect(await inject(second, "p1")).toMatchObject({
      status: 409,
      body: { error: expect.stringContaining(GATE_PAUSED) },
    });
    expect(await resumeWith(second, token)).toEqual({
      status: 202,
      body: { status: "resumed", session_id: "incident-p1", replay: false },
    });
    expect(await inject(second, "p1")).toMatchObject({ status: 202, body: { state: "idle" } });
    expect(await resumeWith(second, token)).toEqual({
      status: 202,
      body: { status: "resumed", session_id: "incident-p1", replay: true },
    });
    // The replay changed nothing: one resume row, and a new pause still holds.
    await paused(second, { session_id: "incident-p1", reason: "other" });
    expect((await inject(second, "p1")).status).toBe(409);
    await second.sigterm();
    const rows = await store.rows(first.sessionDb, "svc", "incident-p1");
    const names = rows.map((row) => (row.event.kind === "audit" ? row.event.name : row.event.kind));
    expect(names.filter((name) => name === "svc-pause-resume")).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(token);
  }, 60_000);

  test("an expired token leaves the pause in place with the recovery named; extend-token then resume works", async () => {
    const daemon = await svcOn(store, [say("one"), say("two")]);
    expect((await inject(daemon, "p1")).status).toBe(202);
    const token = await paused(daemon, { session_id: "incident-p1", reason: "maintenance_window", ttl: "1s" });
    // Time under test: the token's one-second TTL runs out.
    await Bun.sleep(1200);
    const expired = await resumeWith(daemon, token);
    expect(expired.status).toBe(409);
    expect(String(expired.body.error)).toMatch(
      /^resume token expired \S+ \(the pause remains; `spar svc sessions extend-token` is the recovery\)$/,
    );
    expect((await inject(daemon, "p1")).status).toBe(409);
    const extended = await post(daemon, "/extend-token", { token, ttl: "1h" });
    expect(extended).toMatchObject({ status: 200, body: { token, session_id: "incident-p1" } });
    expect(Date.parse(String(extended.body.expires_at)) - Date.now()).toBeGreaterThan(3_500_000);
    expect((await resumeWith(daemon, token)).body).toMatchObject({ replay: false });
    expect((await inject(daemon, "p1")).status).toBe(202);
    expect((await post(daemon, "/extend-token", { token, ttl: "1h" })).status).toBe(409);
    expect((await post(daemon, "/extend-token", { token: "mrt_AAAAAAAAAAAAAAAAAAAAAA", ttl: "1h" })).status).toBe(404);
    expect((await post(daemon, "/extend-token", { token, ttl: "169h" })).status).toBe(400);
  }, 30_000);

  test("a timed pause resumes by itself after a restart, its token consumed by the timer", async () => {
    const first = await svcOn(store, [say("one")]);
    expect((await inject(first, "p1")).status).toBe(202);
    const resumeAt = new Date(Date.now() + 4000).toISOString();
    const token = await paused(first, { session_id: "incident-p1", reason: "cost_cool_down", resume_at: resumeAt });
    await first.kill9();
    const second = await svcOn(store, [say("two")], first.sessionDb);
    expect((await inject(second, "p1")).status).toBe(409);
    await waitFor(async () => ((await inject(second, "p1")).status === 202 ? true : undefined), 15_000, "the timer");
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(resumeAt));
    expect((await resumeWith(second, token)).body).toMatchObject({ replay: true });
    await second.sigterm();
    const rows = await store.rows(first.sessionDb, "svc", "incident-p1");
    const resumed = rows.find((row) => row.event.kind === "audit" && row.event.name === "svc-pause-resume");
    expect(resumed?.event).toMatchObject({ metadata: { by: "timer" } });
  }, 60_000);
}

for (const store of svcStores("pause")) describe(store.engine, () => storeScenarios(store));
