/**
 * SessionActor as a scheduler over the Executor seam: a second executor (a stand-in for a
 * workload, recording through the session's journal) is run one execution at a time, is handed
 * what the inbox held, is cancelled through `cancel`, and gives back what it could not start.
 * The model turn (TurnExecutor) is covered end to end by the integration tests.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_INBOX_CAPS } from "../../../src/core/inbox-room.ts";
import type { ActorContext } from "../../../src/runtime/actor-types.ts";
import { AutoContinuer } from "../../../src/runtime/auto-continuer.ts";
import type { CancelCause, Execution, ExecutionEnd, Executor, ExecutorSession } from "../../../src/runtime/executor.ts";
import { PricingTable } from "../../../src/runtime/pricing-table.ts";
import { SessionActor } from "../../../src/runtime/session-actor.ts";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";

const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterAll(async () => {
  for (const store of stores) await store.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Run {
  execution: Execution;
  finish(end: ExecutionEnd): void;
}

/** Records a start row through the journal (draining the items), then runs until told to finish. */
class WorkloadExecutor implements Executor {
  readonly cancels: [string, CancelCause][] = [];
  readonly #session: ExecutorSession;
  readonly #runs: Run[] = [];
  readonly #waiters: ((run: Run) => void)[] = [];
  /** Opening writes to refuse, as a store refusing writes would. */
  refuse = 0;

  constructor(session: ExecutorSession) {
    this.#session = session;
  }

  async execute(execution: Execution): Promise<ExecutionEnd | undefined> {
    if (this.refuse > 0) {
      this.refuse--;
      execution.refused(new Error("store refused"));
      return undefined;
    }
    const journal = this.#session.journal;
    const row = { ...journal.header(execution.invocationId, "workload"), kind: "audit" as const };
    const drained = execution.items.map((item) => item.promptId);
    await journal.append([{ ...row, name: "workload-start", metadata: {} }], drained);
    execution.started(execution.items.map((item) => item.message).join("+"));
    return new Promise<ExecutionEnd>((resolve) => {
      const run = { execution, finish: resolve };
      const waiter = this.#waiters.shift();
      if (waiter) waiter(run);
      else this.#runs.push(run);
    });
  }

  cancel(invocationId: string, cause: CancelCause): void {
    this.cancels.push([invocationId, cause]);
  }

  /** The next execution that started (already started, or the next to start). */
  nextRun(): Promise<Run> {
    const run = this.#runs.shift();
    if (run) return Promise.resolve(run);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}

async function setup() {
  const dir = mkdtempSync(join(tmpdir(), "spar-actor-"));
  dirs.push(dir);
  const store = SqliteStore.open(join(dir, "sessions.db"));
  stores.push(store);
  const record = {
    app: "spar",
    id: "s1",
    owner: "local",
    viewers: [],
    contributors: [],
    createdAt: "2026-01-01T00:00:00Z",
    lastTouchedAt: "0001-01-01T00:00:00Z",
  };
  await store.createSession(record);
  const errors: string[] = [];
  const now = () => new Date();
  const context: ActorContext = {
    store,
    pool: {
      runTurn: () => {
        throw new Error("this session runs no model turn");
      },
      forget: () => {},
    },
    pricing: new PricingTable(),
    model: { provider: "echo", name: "echo" },
    agentName: "spar",
    maxSteps: 4,
    nextScriptIndex: () => 0,
    now,
    isShuttingDown: () => false,
    logError: (message) => errors.push(message),
    turnEnded: () => {},
    permissions: { mode: "ask", approvalTimeoutMs: 60_000, allow: [], deny: [] },
    guardrails: { watchdog: "off", maxTurnUsd: 0, maxSessionUsd: 0 },
    autoContinue: new AutoContinuer(
      {
        enabled: false,
        freshnessMs: 0,
        backoffMs: 0,
        maxPerBoot: 0,
        maxPerSession: 0,
        crashLoopBoots: 0,
        crashLoopWindowMs: 0,
      },
      store,
      now,
      () => {},
    ),
    turnRefused: () => {},
    prepareTools: () => Promise.resolve(),
    announceOnce: () => false,
    inboxCaps: DEFAULT_INBOX_CAPS,
    turnDeadlineMs: 0,
    subagents: [],
    toolSpecs: () => [],
  };
  let executor: WorkloadExecutor | undefined;
  const actor = await SessionActor.load(context, record, (session) => {
    executor = new WorkloadExecutor(session);
    return executor;
  });
  if (!executor) throw new Error("the actor built no executor");
  return { actor, executor, store, key: { app: "spar", id: "s1" }, errors };
}

const messages = (run: Run) => run.execution.items.map((item) => item.message);

test("one execution at a time: it drains the inbox, and what arrives meanwhile is drained together by the next", async () => {
  const { actor, executor, store, key } = await setup();
  const first = await actor.inject("one", true);
  const run1 = await executor.nextRun();
  expect(messages(run1)).toEqual(["one"]);
  expect(run1.execution.promptId).toBe(first.promptId);
  expect(actor.status()).toMatchObject({ state: "running", turn_in_flight: true });

  await actor.inject("two", true);
  await actor.inject("three", true);
  expect(actor.pendingCount).toBe(2);
  run1.finish({ status: "completed" });
  const run2 = await executor.nextRun();
  expect(messages(run2)).toEqual(["two", "three"]);
  expect(run2.execution.invocationId).not.toBe(run1.execution.invocationId);
  run2.finish({ status: "completed" });

  // The executor's rows went through the session's journal and drained the durable inbox.
  expect(await store.pendingInbox(key)).toEqual([]);
  const rows = await store.read(key, 0, 100);
  expect(rows.map((row) => [row.event.author, row.event.invocationId])).toEqual([
    ["workload", run1.execution.invocationId],
    ["workload", run2.execution.invocationId],
  ]);
});

test("an interrupt cancels the execution in flight through its executor and answers once it has ended", async () => {
  const { actor, executor } = await setup();
  await actor.inject("work", true);
  const run = await executor.nextRun();
  const answer = actor.interrupt(false, "alice");
  expect(executor.cancels).toEqual([[run.execution.invocationId, "operator"]]);
  let answered = false;
  void answer.then(() => (answered = true));
  await Promise.resolve();
  expect(answered).toBe(false);
  run.finish({ status: "canceled", cancelCause: "operator" });
  expect(await answer).toEqual({ interrupted: true, paused: false });
  expect(actor.status()).toMatchObject({ state: "idle", turn_in_flight: false });
});

test("an execution whose opening write was refused gives its items back; the retry runs them ahead of later ones", async () => {
  const { actor, executor, errors } = await setup();
  executor.refuse = 1;
  await actor.inject("first", true);
  await actor.inject("second", true);
  const run = await executor.nextRun();
  expect(messages(run)).toEqual(["first", "second"]);
  expect(errors.some((message) => message.includes("could not start a turn: Error: store refused"))).toBe(true);
  run.finish({ status: "completed" });
});

test("a parked session starts no execution until it is resumed", async () => {
  const { actor, executor } = await setup();
  actor.pause("maintenance");
  expect(await actor.inject("later", true)).toMatchObject({ woke: false });
  expect(actor.status()).toMatchObject({ state: "paused", turn_in_flight: false });
  expect(await actor.resume("continue", undefined)).toEqual({ resumed: true });
  const run = await executor.nextRun();
  expect(messages(run)).toEqual(["later"]);
  run.finish({ status: "completed" });
});
