/**
 * SessionSubagents' reads decided in process (D351): a name that resolves to nothing is a 404
 * naming what exists, unless the branch scan is past its 500-label cap, where absence cannot be
 * observed and the answer is an empty page.
 */
import { expect, test } from "bun:test";
import type { CommittedRow } from "../../../src/core/events.ts";
import { SparError } from "../../../src/core/errors.ts";
import { SUBAGENT_AUTHOR } from "../../../src/core/subagents.ts";
import type { ActorContext } from "../../../src/runtime/actor-types.ts";
import type { Journal } from "../../../src/runtime/session-journal.ts";
import type { SessionGuards } from "../../../src/runtime/session-guards.ts";
import { SessionSubagents } from "../../../src/runtime/session-subagents.ts";

function starts(count: number): CommittedRow[] {
  return Array.from({ length: count }, (_, index) => ({
    seq: index + 1,
    event: {
      id: `${index}`,
      ts: "2026-11-29T00:00:00Z",
      invocationId: "x",
      author: SUBAGENT_AUTHOR,
      kind: "audit" as const,
      name: "subagent-start",
      metadata: { agent: "worker", branch: index === 0 ? "bg.worker" : `bg.worker-${index + 1}`, mode: "async" },
    },
  }));
}

function subagents(rows: CommittedRow[]): SessionSubagents {
  const context = {
    subagents: [],
    store: { read: () => Promise.resolve([]) },
  } as unknown as ActorContext;
  return new SessionSubagents(
    {
      key: { app: "spar", id: "s" },
      context,
      journal: {} as Journal,
      guards: {} as SessionGuards,
      tools: { run: () => Promise.reject(new Error("no tools")), endTurn: () => Promise.resolve() },
      report: () => Promise.resolve(),
      touched: () => {},
    },
    rows,
  );
}

test("an unknown name is a 404 naming the branches looked at and the names that exist", async () => {
  const error = await subagents(starts(3))
    .events("ghost", 0, 10)
    .catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(SparError);
  expect((error as SparError).code).toBe("not_found");
  expect((error as SparError).details).toMatchObject({
    agent: "ghost",
    branches: ["ghost", "bg.ghost", "sub.ghost", "remote.ghost"],
    available: ["worker"],
  });
});

test("past 500 labels absence cannot be observed: an unknown name answers an empty page", async () => {
  const page = await subagents(starts(501)).events("ghost", 7, 10);
  expect(page).toEqual({
    branches: ["ghost", "bg.ghost", "sub.ghost", "remote.ghost"],
    events: [],
    nextSince: 7,
    truncated: false,
  });
});

test("a known name's branches list its instance-suffixed labels, at most 500", async () => {
  const page = await subagents(starts(600)).events("worker", 0, 10);
  expect(page.branches.slice(0, 4)).toEqual(["worker", "bg.worker", "sub.worker", "remote.worker"]);
  expect(page.branches).toHaveLength(4 + 500);
});
