/** The pure rules of subagents (D351): grants, labels, the anchored family match, and the row fold. */
import { expect, test } from "bun:test";
import type { CommittedRow } from "../../../src/core/events.ts";
import {
  SUBAGENT_AUTHOR,
  belongsTo,
  continueMetadata,
  endMetadata,
  foldInstances,
  grants,
  instanceLabel,
  isSubagentName,
  nameOfLabel,
  ownRows,
  startMetadata,
  type SubagentInstance,
} from "../../../src/core/subagents.ts";

test("a grant is exact or a prefix with *; loop-control tools are never granted", () => {
  const spec = { tools: ["read_*", "bash", "*"] };
  expect(grants({ tools: ["read_*"] }, "read_file")).toBe(true);
  expect(grants({ tools: ["read_*"] }, "write_file")).toBe(false);
  expect(grants({ tools: ["bash"] }, "bash")).toBe(true);
  expect(grants({ tools: [] }, "bash")).toBe(false);
  expect(grants(spec, "schedule_next_turn")).toBe(false);
  expect(grants(spec, "return_result")).toBe(false);
});

test("instance labels: the mode's spelling, then -2, -3 once taken", () => {
  expect(instanceLabel("a", "sync", new Set())).toBe("a");
  expect(instanceLabel("a", "async", new Set())).toBe("bg.a");
  expect(instanceLabel("a", "async", new Set(["bg.a", "bg.a-2"]))).toBe("bg.a-3");
  expect(nameOfLabel("bg.cluster-12")).toBe("cluster");
  expect(nameOfLabel("sub.cluster.sub.x")).toBe("cluster");
});

test("a family is anchored: spellings, -<digits> counters and descendants, never a longer name", () => {
  for (const label of [
    "cluster",
    "bg.cluster",
    "sub.cluster",
    "remote.cluster",
    "bg.cluster-2",
    "sub.cluster.sub.x",
    "cluster-3.y",
  ])
    expect(belongsTo(label, "cluster")).toBe(true);
  for (const label of ["clusters", "bg.clusterx", "cluster-x", "bg.cluster-", "x.cluster"])
    expect(belongsTo(label, "cluster")).toBe(false);
  expect(isSubagentName("cluster")).toBe(true);
  expect(isSubagentName("a.b")).toBe(false);
  expect(isSubagentName("worker-2")).toBe(false);
});

function audit(seq: number, name: string, metadata: Record<string, unknown>): CommittedRow {
  return {
    seq,
    event: {
      id: `${seq}`,
      ts: "2026-11-29T00:00:00Z",
      invocationId: "x",
      author: SUBAGENT_AUTHOR,
      kind: "audit",
      name,
      metadata,
    },
  };
}

test("the fold: start without end reads running; a continued start carries the counters on; ends add up", () => {
  const instance: SubagentInstance = {
    name: "s",
    label: "bg.s",
    mode: "async",
    task: "t",
    startedAt: "2026-11-29T00:00:00Z",
    status: "running",
    turns: 0,
    inputTokens: 0,
    outputTokens: 0,
    costUsd: 0,
    continues: 0,
  };
  const started = [audit(1, "subagent-start", startMetadata(instance))];
  expect(foldInstances(started)[0]?.status).toBe("running");
  const cut = { ...instance, status: "cut" as const };
  const spent = { turns: 1, inputTokens: 10, outputTokens: 5, costUsd: 0.5 };
  const rows = [
    ...started,
    audit(2, "subagent-end", endMetadata(cut, spent)),
    audit(3, "subagent-start", continueMetadata({ ...instance, continues: 1 })),
    audit(4, "subagent-end", endMetadata({ ...instance, status: "completed", lastReport: "ok" }, spent)),
  ];
  expect(foldInstances(rows)).toEqual([
    {
      ...instance,
      status: "completed",
      lastReport: "ok",
      turns: 2,
      inputTokens: 20,
      outputTokens: 10,
      costUsd: 1,
      continues: 1,
    },
  ]);
  const branchRow: CommittedRow = { seq: 5, event: { ...audit(5, "x", {}).event, branch: "bg.s" } };
  expect(ownRows([...rows, branchRow])).toHaveLength(4);
});
