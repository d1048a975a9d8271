/**
 * `spar svc`'s operator routes against the real daemon over HTTP: POST /abort cancels the turn in
 * flight and makes the session terminal (every later inject 409 naming the abort, a second abort
 * 409, an unknown session 404), the marker is on the session's row and survives a restart;
 * POST /sessions/{id}/guardrails/reset clears a watchdog halt so the next inject runs; after
 * SIGTERM writes are 503 with Retry-After while the turn in flight still ends and is answered.
 */
import { expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { type Daemon, postJson, tempDir, waitFor } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { call, say, stall, writeScript } from "../../support/scripted.ts";

const scope = daemonScope();

const scripted = (lines: readonly unknown[], sessionDb?: string) =>
  scope.start({
    role: "svc",
    args: ["--model=scripted", "--watchdog=enforce"],
    env: { SVC_SCRIPT: writeScript(lines) },
    ...(sessionDb === undefined ? {} : { sessionDb }),
  });

async function metric(daemon: Daemon, series: string): Promise<number> {
  const text = await (await fetch(`${daemon.baseUrl}/metrics`)).text();
  const line = text.split("\n").find((row) => row.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** Resolves once the turn's opening rows are committed: a turn is in flight. */
const turnStarted = (daemon: Daemon) =>
  waitFor(async () => ((await metric(daemon, "svc_store_event_rows")) > 0 ? true : undefined), 10_000, "a turn");

async function answer(response: Response): Promise<{ status: number; body: Record<string, unknown> }> {
  expect(response.headers.get("content-type")).toContain("application/json");
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

test("abort mid-turn: the waiting inject is 409, the turn is cancelled, later injects and a second abort are 409, unknown 404", async () => {
  const daemon = await scripted([stall("working", 20_000)]);
  const waiting = postJson(`${daemon.baseUrl}/inject`, { uid: "a1" });
  await turnStarted(daemon);
  const started = Date.now();
  const aborted = await answer(await postJson(`${daemon.baseUrl}/abort`, { session_id: "incident-a1", reason: "bad" }));
  expect(aborted).toEqual({ status: 202, body: { status: "aborted", session_id: "incident-a1" } });
  expect(Date.now() - started).toBeLessThan(10_000);
  expect(await answer(await waiting)).toMatchObject({
    status: 409,
    body: { error: 'session "incident-a1" is aborted (bad)' },
  });
  expect(await metric(daemon, 'svc_turns_total{outcome="canceled"}')).toBe(1);
  expect(await answer(await postJson(`${daemon.baseUrl}/inject`, { uid: "a1" }))).toMatchObject({
    status: 409,
    body: { error: 'session "incident-a1" is aborted (bad)' },
  });
  expect(await answer(await postJson(`${daemon.baseUrl}/abort`, { session_id: "incident-a1" }))).toMatchObject({
    status: 409,
    body: { error: 'session "incident-a1": session already aborted' },
  });
  expect(await answer(await postJson(`${daemon.baseUrl}/abort`, { session_id: "incident-none" }))).toMatchObject({
    status: 404,
    body: { error: "session not found: incident-none" },
  });
}, 30_000);

test("the abort marker is on the session's row, not in its transcript, and holds after a restart on the same store", async () => {
  const first = await scope.start({ role: "svc" });
  expect((await postJson(`${first.baseUrl}/inject`, { uid: "r1" })).status).toBe(202);
  expect((await postJson(`${first.baseUrl}/abort`, { session_id: "incident-r1" })).status).toBe(202);
  expect(await first.sigterm()).toBe(0);
  const store = SqliteStore.open(first.sessionDb);
  try {
    const record = await store.getSession({ app: "svc", id: "incident-r1" });
    expect(record?.abort).toMatchObject({ reason: "operator abort", by: "local" });
    const transcript = JSON.stringify(await store.read({ app: "svc", id: "incident-r1" }, 0, 100));
    expect(transcript).not.toContain("operator abort");
  } finally {
    await store.close();
  }
  const second = await scope.start({ role: "svc", sessionDb: first.sessionDb });
  expect(await answer(await postJson(`${second.baseUrl}/inject`, { uid: "r1" }))).toMatchObject({
    status: 409,
    body: { error: 'session "incident-r1" is aborted (operator abort)' },
  });
  expect((await postJson(`${second.baseUrl}/abort`, { session_id: "incident-r1" })).status).toBe(409);
  expect((await postJson(`${second.baseUrl}/inject`, { uid: "r2" })).status).toBe(202);
}, 30_000);

test("a watchdog halt: injects are 409 naming it until POST /sessions/{id}/guardrails/reset, then the next inject runs", async () => {
  const loop = Array.from({ length: 5 }, () => call("lookup", { q: "same" }));
  const daemon = await scripted([...loop, say("unstuck"), say("next")]);
  expect(await answer(await postJson(`${daemon.baseUrl}/inject`, { uid: "g1" }))).toMatchObject({
    status: 409,
    body: { error: expect.stringContaining('session "incident-g1" is halted by the watchdog guardrail') },
  });
  expect((await postJson(`${daemon.baseUrl}/inject`, { uid: "g1" })).status).toBe(409);
  const reset = await answer(await postJson(`${daemon.baseUrl}/sessions/incident-g1/guardrails/reset`, {}));
  expect(reset).toMatchObject({ status: 200, body: { reset: ["watchdog"], guardrails: { halted: false } } });
  // The refused inject's message waited in the inbox: the reset drains it first.
  await waitFor(
    async () => ((await metric(daemon, 'svc_turns_total{outcome="completed"}')) === 1 ? true : undefined),
    10_000,
    "the waiting message's turn",
  );
  expect(await answer(await postJson(`${daemon.baseUrl}/inject`, { uid: "g1" }))).toMatchObject({
    status: 202,
    body: { status: "accepted", session_id: "incident-g1", state: "idle" },
  });
  const again = await answer(await postJson(`${daemon.baseUrl}/sessions/incident-g1/guardrails/reset`, {}));
  expect(again).toMatchObject({ status: 200, body: { reset: [] } });
  expect((await postJson(`${daemon.baseUrl}/sessions/incident-none/guardrails/reset`, {})).status).toBe(404);
}, 30_000);

test("draining: after SIGTERM an inject is 503 with Retry-After while the turn in flight ends and is answered 202; exit 0", async () => {
  const daemon = await scripted([stall("working", 3000, "done")]);
  const waiting = postJson(`${daemon.baseUrl}/inject`, { uid: "d1" });
  await turnStarted(daemon);
  daemon.process.kill("SIGTERM");
  await waitFor(() => (daemon.log().includes("SIGTERM: shutting down") ? true : undefined), 5000, "the drain");
  for (const [path, body] of [
    ["/inject", { uid: "d2" }],
    ["/abort", { session_id: "incident-d1" }],
  ] as const) {
    const refused = await postJson(`${daemon.baseUrl}${path}`, body);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(await answer(refused)).toMatchObject({
      status: 503,
      body: { error: "daemon is shutting down; retry against its successor" },
    });
  }
  expect((await fetch(`${daemon.baseUrl}/metrics`)).status).toBe(200);
  expect(await answer(await waiting)).toMatchObject({
    status: 202,
    body: { session_id: "incident-d1", state: "idle" },
  });
  expect(await daemon.process.exited).toBe(0);
  expect(daemon.log()).not.toContain("drain window");
}, 30_000);

test("a turn is bounded by the workload's budget.max_wallclock_seconds: past it the turn is cancelled and the inject answers 504", async () => {
  const workload = tempDir("spar-deadline-");
  mkdirSync(join(workload, "specialists"));
  writeFileSync(
    join(workload, "workload.yaml"),
    "name: quick\ndescription: One helper.\nspecialists:\n  - helper\nbudget:\n  max_wallclock_seconds: 1\n",
  );
  writeFileSync(join(workload, "specialists", "helper.tmpl"), "---\ndescription: Helps.\nmode: Task\n---\nHelp.\n");
  const daemon = await scope.start({
    role: "svc",
    args: ["--model=scripted", `--workload=${workload}`],
    env: { SVC_SCRIPT: writeScript([stall("working", 20_000), say("next")]) },
  });
  const started = Date.now();
  const refused = await answer(await postJson(`${daemon.baseUrl}/inject`, { uid: "w1" }));
  expect(refused).toMatchObject({
    status: 504,
    body: { error: "turn canceled: it ran past its 1 s wallclock budget" },
  });
  expect(Date.now() - started).toBeLessThan(10_000);
  const next = await answer(await postJson(`${daemon.baseUrl}/inject`, { uid: "w1" }));
  expect(next).toMatchObject({ status: 202, body: { state: "idle" } });
}, 30_000);
