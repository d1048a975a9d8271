/**
 * svc's write gate end to end: a coordinator delegates to its specialist, whose mutating call of
 * the counting MCP server parks; POST /resume answers it; the server's `.calls` file proves how
 * many times the call ran (the original's UAT method). Scripted model, real daemon, real stdio
 * tool server. The scenarios whose promise lives in the store (the call runs once and a second
 * answer is refused; the intent, effect and audit rows) run on sqlite and on PostgreSQL (D519);
 * the verdicts' rules, which the store does not touch, on sqlite.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { call, say } from "../../support/scripted.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { countedCalls } from "../../fixtures/mcp/counting.ts";
import {
  APPLY,
  type GatedWorkload,
  READ,
  gatedDaemonOptions,
  gatedWorkload,
  injectIncident,
  resume,
  storedRows,
} from "../../support/gated-workload.ts";
import { type SvcStore, gatedOn, sqliteSvcStore, svcStores } from "../../support/svc-store.ts";

const scope = daemonScope();

/** The coordinator delegates, the worker proposes apply_change(replicas), and after the answer finishes. */
function proposal(replicas: number, after: unknown[] = [call("finish_task", { result: "done" }), say("handled")]) {
  return [call("worker", { request: `scale web to ${replicas}` }), call(APPLY, { replicas }), ...after];
}

async function parked(
  workload: GatedWorkload,
  lines: unknown[],
  extra: Parameters<typeof gatedDaemonOptions>[2] = {},
  store: SvcStore = sqliteSvcStore,
) {
  const daemon = await scope.start(gatedOn(store, workload, lines, extra));
  const injected = await injectIncident(daemon, "g1", extra.token === false ? {} : undefined);
  expect(injected.status).toBe(202);
  expect(injected.body.state).toBe("paused");
  expect(injected.pending).toHaveLength(1);
  const question = injected.pending[0];
  if (question === undefined) throw new Error("no question");
  return { daemon, question };
}

test("reject runs nothing, and the specialist is told not to retry or reach the change another way", async () => {
  const workload = gatedWorkload();
  const { daemon, question } = await parked(
    workload,
    proposal(10, [call("finish_task", { result: "left as is" }), say("not scaled")]),
  );
  const answered = await resume(daemon, "incident-g1", question.interrupt_id, {
    verdict: "reject",
    note: "not during the freeze",
  });
  expect(answered.status).toBe(202);
  expect(answered.body).toMatchObject({ outcome: "denied_by_operator", state: "idle" });
  expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);
  await daemon.sigterm();
  const worker = JSON.stringify(await storedRows(daemon.sessionDb, "svc.worker", "incident-g1"));
  expect(worker).toContain("denied_by_operator");
  expect(worker).toContain("do not try to reach the same change by another route");
  expect(worker).toContain("not during the freeze");
});

test("edit runs the operator's arguments; an undeclared argument or a schema violation runs nothing (edit_refused)", async () => {
  const workload = gatedWorkload();
  const finish = [call("finish_task", { result: "done" }), say("handled")];
  const lines = [...proposal(10, []), ...proposal(10, []), ...proposal(10, []), ...finish, ...finish, ...finish];
  const daemon = await scope.start(gatedDaemonOptions(workload, lines));
  const ids: string[] = [];
  for (const uid of ["e1", "e2", "e3"]) {
    const injected = await injectIncident(daemon, uid);
    ids.push(injected.pending[0]?.interrupt_id ?? "");
  }
  const undeclared = await resume(daemon, "incident-e1", ids[0] ?? "", {
    verdict: "edit",
    args: { replicas: 3, force: true },
  });
  expect(undeclared.status).toBe(400);
  expect(undeclared.body).toMatchObject({ outcome: "edit_refused", state: "idle" });
  expect(String(undeclared.body.error)).toContain('declares no argument "force"');
  const invalid = await resume(daemon, "incident-e2", ids[1] ?? "", { verdict: "edit", args: { replicas: "many" } });
  expect(invalid.status).toBe(400);
  expect(invalid.body).toMatchObject({ outcome: "edit_refused" });
  expect(String(invalid.body.error)).toContain("input schema");
  expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);
  const edited = await resume(daemon, "incident-e3", ids[2] ?? "", {
    verdict: "edit",
    args: { replicas: 3 },
    note: "ten is too many",
  });
  expect(edited.status).toBe(202);
  expect(edited.body).toMatchObject({ outcome: "edit_applied", state: "idle" });
  expect(countedCalls(workload.countDir, "apply_change").map((entry) => entry.args)).toEqual([{ replicas: 3 }]);
});

test("an edit without an authenticated approver runs nothing (edit_unattributed)", async () => {
  const workload = gatedWorkload();
  const { daemon, question } = await parked(workload, proposal(10), { token: false });
  const answered = await resume(
    daemon,
    "incident-g1",
    question.interrupt_id,
    { verdict: "edit", args: { replicas: 3 } },
    {},
  );
  expect(answered.status).toBe(400);
  expect(answered.body).toMatchObject({ outcome: "edit_unattributed", state: "idle" });
  expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);
});

test("a scope wider than change_set is refused (approval_scope_refused) and the question stays open for a single-call answer", async () => {
  const workload = gatedWorkload();
  const { daemon, question } = await parked(workload, proposal(10));
  const wide = await resume(daemon, "incident-g1", question.interrupt_id, { verdict: "approve", scope: "session" });
  expect(wide.status).toBe(400);
  expect(wide.body).toMatchObject({ outcome: "approval_scope_refused", state: "paused" });
  const noSet = await resume(daemon, "incident-g1", question.interrupt_id, { verdict: "approve", scope: "change_set" });
  expect(noSet.status).toBe(400);
  expect(noSet.body).toMatchObject({ outcome: "change_set_scope_refused" });
  const malformed = await resume(daemon, "incident-g1", question.interrupt_id, { approved: true });
  expect(malformed.status).toBe(400);
  expect(String(malformed.body.error)).toContain("unknown verdict");
  expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);
  const once = await resume(daemon, "incident-g1", question.interrupt_id, { verdict: "approve", scope: "once" });
  expect(once.status).toBe(202);
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
});

test("the deny policy refuses an edited call under its own key (denied_by_policy) and a proposed one before it parks", async () => {
  const workload = gatedWorkload();
  const config = join(workload.directory, "svc.json");
  writeFileSync(config, JSON.stringify({ svc: { permissions: { deny: [`${APPLY}(*"replicas":0*)`] } } }));
  const lines = [
    ...proposal(10, []),
    call("finish_task", { result: "refused" }),
    say("not scaled"),
    call("worker", { request: "scale web to 0" }),
    call(APPLY, { replicas: 0 }),
    call("finish_task", { result: "denied" }),
    say("policy says no"),
  ];
  const { daemon, question } = await parked(workload, lines, { args: [`--config=${config}`] });
  const edited = await resume(daemon, "incident-g1", question.interrupt_id, { verdict: "edit", args: { replicas: 0 } });
  expect(edited.status).toBe(400);
  expect(edited.body).toMatchObject({ outcome: "denied_by_policy" });
  const direct = await injectIncident(daemon, "g2");
  expect(direct.body).toMatchObject({ state: "idle", pending: [] });
  expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);
});

test("a read-only tool runs without a question", async () => {
  const workload = gatedWorkload();
  const daemon = await scope.start(
    gatedDaemonOptions(workload, [
      call("worker", { request: "how is web?" }),
      call(READ, {}),
      call("finish_task", { result: "steady" }),
      say("web is steady"),
    ]),
  );
  const injected = await injectIncident(daemon, "r1");
  expect(injected.body).toMatchObject({ state: "idle", pending: [] });
  expect(countedCalls(workload.countDir, "read_status")).toHaveLength(1);
});

/** The scenarios whose promise the store keeps, on one engine. */
function storeScenarios(store: SvcStore): void {
  test("a mutating call parks without running; approve runs it once with its interrupt id as the _meta idempotency key", async () => {
    const workload = gatedWorkload();
    const { daemon, question } = await parked(workload, proposal(10), {}, store);
    expect(question.agent).toBe("worker");
    expect(question.message).toBe("Approve mutating call apply_change(replicas=10)?");
    expect(question.interrupt_id).toMatch(/^gate-/);
    expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);

    const answered = await resume(daemon, "incident-g1", question.interrupt_id, { verdict: "approve", note: "go" });
    expect(answered.status).toBe(202);
    expect(answered.body).toMatchObject({ status: "resumed", outcome: "apply", state: "idle", pending: [] });
    expect(countedCalls(workload.countDir, "apply_change")).toEqual([
      { args: { replicas: 10 }, meta: expect.objectContaining({ idempotency_key: question.interrupt_id }) },
    ]);

    const metrics = await (
      await fetch(`${daemon.baseUrl}/metrics`, { headers: { authorization: "Bearer gate-s3cret" } })
    ).text();
    expect(metrics).toContain('svc_gate_outcomes_total{outcome="awaiting_approval"} 1');
    expect(metrics).toContain('svc_gate_outcomes_total{outcome="apply"} 1');
    expect(metrics).toContain("svc_turns_total");
    expect(metrics).not.toContain("spar_turns_total");
    const again = await resume(daemon, "incident-g1", question.interrupt_id, { verdict: "approve" });
    expect(again.status).toBe(409);
    expect(String(again.body.error)).toContain("already answered");
    expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);

    await daemon.sigterm();
    const worker = JSON.stringify(await store.rows(daemon.sessionDb, "svc.worker", "incident-g1"));
    expect(worker).toContain('\\"verdict\\":\\"apply\\"');
    expect(worker).toContain("it ran once");
    const coordinator = JSON.stringify(await store.rows(daemon.sessionDb, "svc", "incident-g1"));
    expect(coordinator).toContain("SPECIALIST");
    expect(coordinator).toContain("handled");
  });

  test("hitl.on_mutation apply runs the call once without a question (intent and effect rows); dry_run never runs it", async () => {
    const applying = gatedWorkload({ onMutation: "apply" });
    const daemon = await scope.start(gatedOn(store, applying, proposal(4)));
    const injected = await injectIncident(daemon, "a1");
    expect(injected.body).toMatchObject({ state: "idle", pending: [] });
    expect(countedCalls(applying.countDir, "apply_change").map((entry) => entry.args)).toEqual([{ replicas: 4 }]);
    await daemon.sigterm();
    const rows = JSON.stringify(await store.rows(daemon.sessionDb, "svc.worker", "incident-a1"));
    expect(rows).toContain('"name":"gate-intent"');
    expect(rows).toContain('"name":"gate-effect"');
    expect(rows).toContain('"outcome":"apply"');

    const dry = gatedWorkload({ onMutation: "dry_run" });
    const dryDaemon = await scope.start(gatedOn(store, dry, proposal(4)));
    expect((await injectIncident(dryDaemon, "d1")).body).toMatchObject({ state: "idle", pending: [] });
    expect(countedCalls(dry.countDir, "apply_change")).toEqual([]);
    await dryDaemon.sigterm();
    const dryRows = JSON.stringify(await store.rows(dryDaemon.sessionDb, "svc.worker", "incident-d1"));
    expect(dryRows).toContain('"status":"dry_run"');
    expect(dryRows).toContain('"outcome":"dry_run"');
  });

  test("each adjudication is a durable gate-audit row and a JSON line of --audit-log (mode 0600) naming outcome, call and approver", async () => {
    const workload = gatedWorkload();
    const auditLog = join(workload.directory, "audit.jsonl");
    const { daemon, question } = await parked(workload, proposal(10), { args: [`--audit-log=${auditLog}`] }, store);
    await resume(daemon, "incident-g1", question.interrupt_id, { verdict: "approve", note: "go" });
    await daemon.sigterm();
    expect(statSync(auditLog).mode & 0o777).toBe(0o600);
    const lines = readFileSync(auditLog, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => line.outcome)).toEqual(["awaiting_approval", "apply"]);
    expect(lines[1]).toMatchObject({
      msg: "write gate",
      level: "INFO",
      tool: APPLY,
      call: "apply_change(replicas=10)",
      agent: "worker",
      session: "incident-g1",
      interrupt_id: question.interrupt_id,
      approver: "svc-inject",
      note: "go",
    });
    const rows = await store.rows(daemon.sessionDb, "svc.worker", "incident-g1");
    const decisions = rows
      .map((row) => row.event)
      .filter((event) => event.kind === "audit" && event.name === "gate-audit")
      .map((event) => (event.kind === "audit" ? event.metadata : {}));
    expect(decisions.map((decision) => decision.outcome)).toEqual(["awaiting_approval", "apply"]);
    expect(decisions[1]).toMatchObject({
      verdict: "approve",
      authority: "operator_verdict",
      disposition: "authorized",
      approver: "svc-inject",
      note: "go",
      key: "apply_change(replicas=10)",
      args: { replicas: 10 },
    });
  });
}

for (const store of svcStores("gate")) describe(store.engine, () => storeScenarios(store));
