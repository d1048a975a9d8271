/**
 * Change sets and grants end to end (spec: Change set and grant): a specialist's report proposes
 * two calls; the first parks with the set in its question; `scope: change_set` approves it and
 * mints a grant for the other, which fires once without a question; a second identical call asks
 * again (`Stale:`); a precondition that moved between approval and the granted call voids the
 * grant and re-parks naming the field, both values and the read.
 */
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { GateLedger } from "../../../src/svc/gate/gate-ledger.ts";
import { blockTool, countedCalls, releaseTool, waitForCalls } from "../../fixtures/mcp/counting.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import {
  APPLY,
  gatedDaemonOptions,
  gatedWorkload,
  injectIncident,
  resume,
  storedRows,
} from "../../support/gated-workload.ts";
import { call, say } from "../../support/scripted.ts";

const scope = daemonScope();

/** The worker reports a plan of two changes, then is asked to apply it and proposes the first. */
const PLAN_AND_FIRST = [
  call("worker", { request: "plan the scale-up" }),
  call("finish_task", {
    result: "scale in two steps",
    proposed_change: [
      { tool: "apply_change", arguments: '{"replicas":2}' },
      { tool: "apply_change", arguments: { replicas: 3 } },
    ],
  }),
  call("worker", { request: "apply the plan" }),
  call(APPLY, { replicas: 2 }),
];

test("scope change_set approves the set: the other call fires once on its grant, without a question; a repeat asks again", async () => {
  const workload = gatedWorkload();
  const lines = [...PLAN_AND_FIRST, call(APPLY, { replicas: 3 }), call(APPLY, { replicas: 3 })];
  const daemon = await scope.start(gatedDaemonOptions(workload, lines));
  const injected = await injectIncident(daemon, "c1");
  expect(injected.body.state).toBe("paused");
  const question = injected.pending[0];
  expect(question?.message).toBe(
    "Approve mutating call apply_change(replicas=2)? It is one of 2 calls in the change set worker proposed; answer with scope=change_set to authorize all 2.",
  );
  const answered = await resume(daemon, "incident-c1", question?.interrupt_id ?? "", {
    verdict: "approve",
    scope: "change_set",
    note: "both steps",
  });
  expect(answered.status).toBe(202);
  const calls = countedCalls(workload.countDir, "apply_change");
  expect(calls.map((entry) => entry.args)).toEqual([{ replicas: 2 }, { replicas: 3 }]);
  expect(calls[0]?.meta?.idempotency_key).toBe(question?.interrupt_id);
  expect(String(calls[1]?.meta?.idempotency_key)).toMatch(/^grant-/);
  expect(answered.body.state).toBe("paused");
  const repeat = (answered.body.pending as { message: string }[])[0];
  expect(repeat?.message).toBe(
    "Approve mutating call apply_change(replicas=3)? (you approved this as part of a change set, and svc is asking again: this call was already approved once and has already been made; a second identical call needs its own approval)",
  );
  await daemon.sigterm();
  const rows = JSON.stringify(await storedRows(daemon.sessionDb, "svc.worker", "incident-c1"));
  expect(rows).toContain('"outcome":"change_set_approved"');
  expect(rows).toContain('"outcome":"approved_by_change_set"');
});

test("a precondition that moved since the approval voids the grant and re-parks naming the field, both values and the read", async () => {
  const workload = gatedWorkload({ precondition: true });
  const lines = [...PLAN_AND_FIRST, call(APPLY, { replicas: 3 })];
  const daemon = await scope.start(gatedDaemonOptions(workload, lines));
  const injected = await injectIncident(daemon, "c2");
  const question = injected.pending[0];
  expect(question?.message).toContain("It is one of 2 calls in the change set worker proposed");
  blockTool(workload.countDir, "apply_change");
  const answering = resume(daemon, "incident-c2", question?.interrupt_id ?? "", {
    verdict: "approve",
    scope: "change_set",
  });
  await waitForCalls(workload.countDir, "apply_change", 1);
  writeFileSync(join(workload.countDir, "state"), "degraded");
  releaseTool(workload.countDir, "apply_change");
  const answered = await answering;
  expect(answered.status).toBe(202);
  expect(countedCalls(workload.countDir, "apply_change").map((entry) => entry.args)).toEqual([{ replicas: 2 }]);
  expect(answered.body.state).toBe("paused");
  const reparked = (answered.body.pending as { message: string }[])[0];
  expect(reparked?.message).toBe(
    'Approve mutating call apply_change(replicas=3)? (you approved this as part of a change set, and svc is asking again: the cluster moved since this was approved: output.state was "steady" at approval and is "degraded" now (precondition read read_status()))',
  );
  await daemon.kill9();
  writeFileSync(join(workload.countDir, "state"), "steady");
  const ledger = GateLedger.fold(await storedRows(daemon.sessionDb, "svc.worker", "incident-c2"));
  const grants = ledger.grantsFor('apply_change({"replicas":3})');
  expect(grants).toHaveLength(1);
  expect(grants[0]?.voided).toContain('output.state was "steady"');
  expect(grants[0]?.spent).toBe(false);
});

test("an invalid proposed change is refused back to the specialist (invalid_proposed_change) and no set is recorded", async () => {
  const workload = gatedWorkload();
  const lines = [
    call("worker", { request: "plan" }),
    call("finish_task", {
      result: "plan",
      proposed_change: [{ tool: "apply_change", arguments: { replicas: "many" } }],
    }),
    call("finish_task", { result: "no plan" }),
    say("nothing to do"),
  ];
  const daemon = await scope.start(gatedDaemonOptions(workload, lines));
  const injected = await injectIncident(daemon, "c3");
  expect(injected.body.state).toBe("idle");
  await daemon.sigterm();
  const rows = JSON.stringify(await storedRows(daemon.sessionDb, "svc.worker", "incident-c3"));
  expect(rows).toContain("invalid_proposed_change");
  expect(rows).not.toContain('"name":"gate-change-set"');
});

test("a grant past hitl.change_set_ttl re-parks its call stating when the set was approved and when that expired", async () => {
  const workload = gatedWorkload({ changeSetTtl: "1s" });
  const daemon = await scope.start(gatedDaemonOptions(workload, [...PLAN_AND_FIRST, call(APPLY, { replicas: 3 })]));
  const injected = await injectIncident(daemon, "c4");
  blockTool(workload.countDir, "apply_change");
  const answering = resume(daemon, "incident-c4", injected.pending[0]?.interrupt_id ?? "", {
    verdict: "approve",
    scope: "change_set",
  });
  await waitForCalls(workload.countDir, "apply_change", 1);
  // Time under test: the change set's one-second TTL runs out while the call is held.
  await Bun.sleep(1200);
  releaseTool(workload.countDir, "apply_change");
  const answered = await answering;
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
  const reparked = (answered.body.pending as { message: string }[])[0];
  expect(reparked?.message).toMatch(
    /^Approve mutating call apply_change\(replicas=3\)\? \(you approved this as part of a change set, and svc is asking again: the change set was approved at \d\d:\d\d:\d\dZ and that approval expired at \d\d:\d\d:\d\dZ\)$/,
  );
});
