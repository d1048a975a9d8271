/**
 * Graph dispatch end to end (reference 1.7, 3.5 b): the SingleTurn classifier's reply routes the
 * incident to the specialist it names (anything else to `_fallback`); with
 * `hitl.require_approval` the routed specialist's result parks as `approve-<name>`, a durable
 * question that survives a restart and is answered by POST /resume (`{"approved": true}` or a
 * literal `true` approves, anything else rejects). A routed specialist's mutating call parks on
 * the write gate first, and its approval carries the graph on to the result question. Scripted
 * model, real daemon, the counting MCP server.
 */
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { countedCalls, countingServerEntry } from "../../fixtures/mcp/counting.ts";
import { tempDir } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { APPLY, injectIncident, resume } from "../../support/gated-workload.ts";
import { call, say } from "../../support/scripted.ts";
import { auditRows, shapeDaemonOptions, shapeWorkload, storedEvents } from "../../support/shape-workload.ts";

const scope = daemonScope();

function graphWorkload(extra: { bundle?: string[]; diskFull?: string[] } = {}): string {
  return shapeWorkload(
    [
      "name: triage-graph",
      "dispatch: graph",
      "specialists:",
      "  - classifier",
      "  - disk_full",
      "  - _fallback",
      "hitl:",
      "  require_approval: true",
      ...(extra.bundle ?? []),
    ],
    {
      classifier: { front: ["mode: SingleTurn"], instruction: "Reply with exactly one of: disk_full, _fallback." },
      disk_full: { front: extra.diskFull ?? ["tools:", "  mcp: []"] },
      _fallback: { front: ["tools:", "  mcp: []"] },
    },
  );
}

test("the classifier routes to disk_full; its result parks as approve-disk_full across a restart; approval answers it once", async () => {
  const directory = graphWorkload();
  const lines = [say("disk_full\n"), call("finish_task", { result: "/var is full" })];
  const daemon = await scope.start(shapeDaemonOptions(directory, lines));
  const injected = await injectIncident(daemon, "g1");
  expect(injected.status).toBe(202);
  expect(injected.body).toMatchObject({
    state: "paused",
    pending: [
      {
        interrupt_id: "approve-disk_full",
        agent: "disk_full",
        message: 'Approve triage result from disk_full? Result: {"result":"/var is full"}',
      },
    ],
    result: { specialist: "disk_full", output: { result: "/var is full" } },
  });
  await daemon.sigterm();

  // The question is durable: after a restart the session still waits on it, and refuses a new incident.
  const again = await scope.start(shapeDaemonOptions(directory, [], { sessionDb: daemon.sessionDb }));
  const refused = await injectIncident(again, "g1");
  expect(refused.status).toBe(409);
  expect(String(refused.body.error)).toContain("waits on approve-disk_full");
  const approved = await resume(again, "incident-g1", "approve-disk_full", { approved: true, note: "looks right" });
  expect(approved.status).toBe(202);
  expect(approved.body).toMatchObject({ outcome: "result_approved", state: "idle", pending: [] });
  const twice = await resume(again, "incident-g1", "approve-disk_full", { approved: false });
  expect(twice.status).toBe(409);
  expect(String(twice.body.error)).toContain("already answered (result_approved");
  await again.sigterm();

  const coordinator = await storedEvents(daemon.sessionDb, "svc", "incident-g1");
  expect(auditRows(coordinator, "dispatch-route")).toEqual([
    { classifier: "classifier", reply: "disk_full\n", route: "disk_full", matched: true },
  ]);
  expect(auditRows(coordinator, "result-answer")).toEqual([
    expect.objectContaining({
      interrupt_id: "approve-disk_full",
      approved: true,
      outcome: "result_approved",
      note: "looks right",
      approver: "svc-inject",
    }),
  ]);
  const routed = await storedEvents(daemon.sessionDb, "svc.disk_full", "incident-g1");
  expect(routed.find((event) => event.kind === "user-message")).toMatchObject({
    text: expect.stringContaining("INJECT"),
  });
  expect(await storedEvents(daemon.sessionDb, "svc._fallback", "incident-g1")).toEqual([]);
});

test("a reply naming no specialist routes to _fallback; anything but approved: true rejects, a literal true approves", async () => {
  const lines = [
    say("network_partition"),
    say("could not tell"),
    say("Disk_Full"),
    say("unsure"),
    say("classifier"),
    say("still unsure"),
  ];
  const daemon = await scope.start(shapeDaemonOptions(graphWorkload(), lines));
  for (const uid of ["f1", "f2", "f3"]) {
    const injected = await injectIncident(daemon, uid);
    expect(injected.status).toBe(202);
    expect(injected.pending.map((question) => question.interrupt_id)).toEqual(["approve-_fallback"]);
  }
  const verdict = await resume(daemon, "incident-f1", "approve-_fallback", { verdict: "approve" });
  expect(verdict.body).toMatchObject({ outcome: "result_rejected", state: "idle" });
  const no = await resume(daemon, "incident-f2", "approve-_fallback", { approved: false, note: "wrong" });
  expect(no.body).toMatchObject({ outcome: "result_rejected", state: "idle" });
  const yes = await resume(daemon, "incident-f3", "approve-_fallback", true);
  expect(yes.body).toMatchObject({ outcome: "result_approved", state: "idle" });
  const unknown = await resume(daemon, "incident-f3", "approve-disk_full", true);
  expect(unknown.status).toBe(404);
  await daemon.sigterm();
  const routes = auditRows(await storedEvents(daemon.sessionDb, "svc", "incident-f2"), "dispatch-route");
  expect(routes).toEqual([{ classifier: "classifier", reply: "Disk_Full", route: "_fallback", matched: false }]);
});

test("a routed specialist's mutating call parks on the write gate; its approval runs the call once and parks the result", async () => {
  const countDir = tempDir("spar-counts-");
  const directory = graphWorkload({
    bundle: [
      "tool_catalog:",
      "  mcp:",
      "    - server: blocker",
      "  tools:",
      "    - name: apply_change",
      "      mutating: true",
    ],
    diskFull: [
      "capability: change_executor",
      "tools:",
      "  mcp:",
      "    - server: blocker",
      "      tools: [apply_change]",
    ],
  });
  writeFileSync(
    join(directory, "mcp.json"),
    JSON.stringify({ version: 1, servers: { blocker: countingServerEntry(countDir) } }),
  );
  const lines = [say("disk_full"), call(APPLY, { replicas: 2 }), call("finish_task", { result: "grew the volume" })];
  const daemon = await scope.start(shapeDaemonOptions(directory, lines));
  const injected = await injectIncident(daemon, "w1");
  expect(injected.status).toBe(202);
  expect(injected.body.state).toBe("paused");
  const gate = injected.pending[0];
  expect(gate).toMatchObject({ agent: "disk_full", message: "Approve mutating call apply_change(replicas=2)?" });
  expect(countedCalls(countDir, "apply_change")).toEqual([]);

  const answered = await resume(daemon, "incident-w1", gate?.interrupt_id ?? "", { verdict: "approve" });
  expect(answered.status).toBe(202);
  expect(answered.body).toMatchObject({
    outcome: "apply",
    state: "paused",
    pending: [
      {
        interrupt_id: "approve-disk_full",
        agent: "disk_full",
        message: 'Approve triage result from disk_full? Result: {"result":"grew the volume"}',
      },
    ],
  });
  expect(countedCalls(countDir, "apply_change")).toHaveLength(1);
});
