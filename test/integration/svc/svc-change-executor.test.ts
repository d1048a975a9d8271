/**
 * Graph dispatch's change executor (reference 1.7: "a `capability: change_executor` node receives
 * any approved `proposed_change` set"): approving a routed specialist's result that carries a
 * `proposed_change` runs the workload's change executor on exactly that change, once (a
 * `dispatch-handover` row, also after kill -9 between the approval and the hand-over); its
 * mutating calls still park on the write gate, and its result is not asked about again. A
 * rejected result hands nothing on. Scripted model, real daemon, the counting MCP server.
 */
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { countedCalls, countingServerEntry, waitForCalls } from "../../fixtures/mcp/counting.ts";
import { tempDir } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { APPLY, injectIncident, resume } from "../../support/gated-workload.ts";
import { call, say } from "../../support/scripted.ts";
import { auditRows, shapeDaemonOptions, shapeWorkload, storedEvents } from "../../support/shape-workload.ts";

const scope = daemonScope();

function executorWorkload(onMutation: "require_approval" | "apply" = "require_approval") {
  const countDir = tempDir("spar-counts-");
  const directory = shapeWorkload(
    [
      "name: triage-and-fix",
      "dispatch: graph",
      "specialists:",
      "  - classifier",
      "  - diagnoser",
      "  - executor",
      "  - _fallback",
      "tool_catalog:",
      "  mcp:",
      "    - server: blocker",
      "  tools:",
      "    - name: apply_change",
      "      mutating: true",
      "hitl:",
      "  require_approval: true",
      `  on_mutation: ${onMutation}`,
    ],
    {
      classifier: { front: ["mode: SingleTurn"], instruction: "Reply with exactly one of: diagnoser, _fallback." },
      diagnoser: { front: ["tools:", "  mcp: []"] },
      executor: {
        front: [
          "capability: change_executor",
          "tools:",
          "  mcp:",
          "    - server: blocker",
          "      tools: [apply_change]",
        ],
      },
      _fallback: { front: ["tools:", "  mcp: []"] },
    },
  );
  writeFileSync(
    join(directory, "mcp.json"),
    JSON.stringify({ version: 1, servers: { blocker: countingServerEntry(countDir) } }),
  );
  return { directory, countDir };
}

const CHANGE = [{ tool: "apply_change", arguments: { replicas: 5 } }];
const DIAGNOSE = [
  say("diagnoser"),
  call("finish_task", { result: "web is short of replicas", proposed_change: CHANGE }),
];

test("approving a result with a proposed_change runs the change executor on it; its call parks, then runs once", async () => {
  const { directory, countDir } = executorWorkload();
  const lines = [...DIAGNOSE, call(APPLY, { replicas: 5 }), call("finish_task", { result: "scaled web to 5" })];
  const daemon = await scope.start(shapeDaemonOptions(directory, lines));
  const injected = await injectIncident(daemon, "h1");
  expect(injected.pending.map((question) => question.interrupt_id)).toEqual(["approve-diagnoser"]);

  const approved = await resume(daemon, "incident-h1", "approve-diagnoser", { approved: true, note: "go" });
  expect(approved.status).toBe(202);
  expect(approved.body).toMatchObject({
    outcome: "result_approved",
    state: "paused",
    pending: [
      { agent: "executor", message: expect.stringContaining("Approve mutating call apply_change(replicas=5)?") },
    ],
  });
  expect(countedCalls(countDir, "apply_change")).toEqual([]);
  const gate = (approved.body.pending as { interrupt_id: string }[])[0]?.interrupt_id ?? "";
  const applied = await resume(daemon, "incident-h1", gate, { verdict: "approve" });
  expect(applied.body).toMatchObject({ outcome: "apply", state: "idle", pending: [] });
  expect(countedCalls(countDir, "apply_change").map((entry) => entry.args)).toEqual([{ replicas: 5 }]);
  await daemon.sigterm();

  const coordinator = await storedEvents(daemon.sessionDb, "svc", "incident-h1");
  expect(auditRows(coordinator, "dispatch-handover")).toEqual([
    {
      interrupt_id: "approve-diagnoser",
      from: "diagnoser",
      to: "executor",
      proposed_change: CHANGE,
      approver: "svc-inject",
    },
  ]);
  const results = auditRows(coordinator, "dispatch-result");
  expect(results.at(-1)).toMatchObject({
    specialist: "executor",
    route: "executor",
    handover_from: "diagnoser",
    result: { result: "scaled web to 5" },
  });
  // The change was approved and its write asked about: no third question.
  expect(auditRows(coordinator, "result-question").map((row) => row.interrupt_id)).toEqual(["approve-diagnoser"]);
  const executor = await storedEvents(daemon.sessionDb, "svc.executor", "incident-h1");
  expect(executor.find((event) => event.kind === "user-message")).toMatchObject({
    text: expect.stringContaining('proposed_change: [{"tool":"apply_change","arguments":{"replicas":5}}]'),
  });
});

test("a rejected result hands nothing on: the change executor never runs", async () => {
  const { directory, countDir } = executorWorkload();
  const daemon = await scope.start(shapeDaemonOptions(directory, DIAGNOSE));
  await injectIncident(daemon, "h2");
  const rejected = await resume(daemon, "incident-h2", "approve-diagnoser", { approved: false, note: "not now" });
  expect(rejected.body).toMatchObject({ outcome: "result_rejected", state: "idle", pending: [] });
  await daemon.sigterm();
  expect(await storedEvents(daemon.sessionDb, "svc.executor", "incident-h2")).toEqual([]);
  expect(auditRows(await storedEvents(daemon.sessionDb, "svc", "incident-h2"), "dispatch-handover")).toEqual([]);
  expect(countedCalls(countDir, "apply_change")).toEqual([]);
});

test("kill -9 after the approval, before the hand-over: the restart hands the change on once", async () => {
  const { directory, countDir } = executorWorkload("apply");
  const first = await scope.start(
    shapeDaemonOptions(directory, DIAGNOSE, { env: { SPAR_FAILPOINTS: "svc.result.before-handover" } }),
  );
  await injectIncident(first, "h3");
  await resume(first, "incident-h3", "approve-diagnoser", true).catch(() => undefined);
  await first.process.exited;
  expect(auditRows(await storedEvents(first.sessionDb, "svc", "incident-h3"), "result-answer")).toHaveLength(1);

  const lines = [call(APPLY, { replicas: 5 }), call("finish_task", { result: "scaled web to 5" })];
  const again = await scope.start(shapeDaemonOptions(directory, lines, { sessionDb: first.sessionDb }));
  await waitForCalls(countDir, "apply_change", 1);
  await again.sigterm();
  expect(countedCalls(countDir, "apply_change").map((entry) => entry.args)).toEqual([{ replicas: 5 }]);
  const coordinator = await storedEvents(first.sessionDb, "svc", "incident-h3");
  expect(auditRows(coordinator, "dispatch-handover")).toHaveLength(1);
});
