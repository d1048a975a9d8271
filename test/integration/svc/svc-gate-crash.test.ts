/**
 * At most once, whatever kill -9 hits (issue 15 item 6, RELIABILITY.md): an approved call of the
 * counting MCP server, with the daemon killed before the verdict is committed, between the
 * verdict and the call, during the call, and between the call's return and its result row, then
 * restarted on the same store. The server's `.calls` file holds 0 or 1 lines, never 2, and the
 * session's rows (folded as the operator CLI folds them) say which. Failpoints
 * (`SPAR_FAILPOINTS`) kill the daemon at the exact point; a blocked tool holds the call open.
 * Every scenario runs on sqlite and on PostgreSQL (test/support/svc-store.ts, D519).
 */
import { describe, expect, test } from "bun:test";
import { GateLedger } from "../../../src/svc/gate/gate-ledger.ts";
import { blockTool, countedCalls, releaseTool, waitForCalls } from "../../fixtures/mcp/counting.ts";
import type { Daemon } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import {
  APPLY,
  type GatedWorkload,
  gatedWorkload,
  injectIncident,
  postTo,
  resume,
} from "../../support/gated-workload.ts";
import { call, say } from "../../support/scripted.ts";
import { type SvcStore, gatedOn, svcStores } from "../../support/svc-store.ts";

const scope = daemonScope();

const PROPOSE = [call("worker", { request: "scale web to 10" }), call(APPLY, { replicas: 10 })];
const FINISH = [call("finish_task", { result: "done" }), say("handled")];

/** The scenarios on one engine's store. */
function scenarios(store: SvcStore): void {
  /** The worker session's gate ledger, read from the store of a stopped daemon. */
  async function workerLedger(sessionDb: string): Promise<GateLedger> {
    return GateLedger.fold(await store.rows(sessionDb, "svc.worker", "incident-k1"));
  }

  /** Park apply_change(replicas=10) on incident-k1 in a daemon started with `env`; answers the daemon and the interrupt id. */
  async function parkedDaemon(workload: GatedWorkload, env: Record<string, string> = {}, after: unknown[] = FINISH) {
    const daemon = await scope.start(gatedOn(store, workload, [...PROPOSE, ...after], { env }));
    const injected = await injectIncident(daemon, "k1");
    expect(injected.body.state).toBe("paused");
    return { daemon, interruptId: injected.pending[0]?.interrupt_id ?? "" };
  }

  /** Answer approve on a daemon that is about to die: the request fails with the connection. */
  async function approveAndDie(daemon: Daemon, interruptId: string): Promise<void> {
    await resume(daemon, "incident-k1", interruptId, { verdict: "approve" }).catch(() => undefined);
    await daemon.process.exited;
  }

  function restart(workload: GatedWorkload, sessionDb: string, lines: unknown[]) {
    return scope.start(gatedOn(store, workload, lines, { sessionDb }));
  }

  test("kill -9 before the verdict is committed: the question survives with the same id, and one approval runs the call once", async () => {
    const workload = gatedWorkload();
    const { daemon, interruptId } = await parkedDaemon(workload);
    await daemon.kill9();
    const ledger = await workerLedger(daemon.sessionDb);
    expect(ledger.state()).toBe("paused");
    expect(ledger.pending().map((entry) => entry.call.interruptId)).toEqual([interruptId]);

    const again = await restart(workload, daemon.sessionDb, FINISH);
    const answered = await resume(again, "incident-k1", interruptId, { verdict: "approve" });
    expect(answered.status).toBe(202);
    expect(answered.body).toMatchObject({ outcome: "apply", state: "idle" });
    expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
  });

  test("kill -9 between the committed verdict and the call: 0 lines; the restart carries the approval out once", async () => {
    const workload = gatedWorkload();
    const { daemon, interruptId } = await parkedDaemon(workload, { SPAR_FAILPOINTS: "svc.gate.after-verdict" });
    await approveAndDie(daemon, interruptId);
    expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);
    const ledger = await workerLedger(daemon.sessionDb);
    expect(ledger.pending()).toEqual([]);
    expect(ledger.unsettled().map((entry) => entry.call.interruptId)).toEqual([interruptId]);

    const again = await restart(workload, daemon.sessionDb, FINISH);
    await waitForCalls(workload.countDir, "apply_change", 1).catch((error) => {
      console.error(again.log());
      throw error;
    });
    expect(again.log()).toContain("carrying out answers a crash left undone, on sessions incident-k1");
    await again.sigterm();
    expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
    const after = await workerLedger(daemon.sessionDb);
    expect(after.state()).toBe("clear");
    expect(after.entry(interruptId)?.effect?.isError).toBe(false);
  });

  /** After the restart the call is never run again: a new proposal on the session is refused as ambiguous. */
  async function expectAmbiguousAfterRestart(workload: GatedWorkload, sessionDb: string, interruptId: string) {
    const ledger = await workerLedger(sessionDb);
    expect(ledger.state()).toBe("ambiguous");
    expect(ledger.ambiguous().map((entry) => entry.call.interruptId)).toEqual([interruptId]);
    releaseTool(workload.countDir, "apply_change");
    const again = await restart(workload, sessionDb, [
      ...PROPOSE,
      call("finish_task", { result: "refused" }),
      say("stuck"),
    ]);
    expect(again.log()).not.toContain("carrying out answers");
    const injected = await injectIncident(again, "k1");
    expect(injected.body).toMatchObject({ state: "ambiguous", pending: [] });
    await again.sigterm();
    expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
    const rows = JSON.stringify(await store.rows(sessionDb, "svc.worker", "incident-k1"));
    expect(rows).toContain("ambiguous_prior_effect");
  }

  test("kill -9 during the call: 1 line; after the restart it is never run again and the session is ambiguous", async () => {
    const workload = gatedWorkload();
    blockTool(workload.countDir, "apply_change");
    const { daemon, interruptId } = await parkedDaemon(workload);
    const answering = resume(daemon, "incident-k1", interruptId, { verdict: "approve" }).catch(() => undefined);
    await waitForCalls(workload.countDir, "apply_change", 1);
    await daemon.kill9();
    await answering;
    await expectAmbiguousAfterRestart(workload, daemon.sessionDb, interruptId);
  });

  test("kill -9 between the call's return and its result row: 1 line; never run again, the session is ambiguous", async () => {
    const workload = gatedWorkload();
    const { daemon, interruptId } = await parkedDaemon(workload, { SPAR_FAILPOINTS: "svc.gate.after-call" });
    await approveAndDie(daemon, interruptId);
    expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
    await expectAmbiguousAfterRestart(workload, daemon.sessionDb, interruptId);
  });

  test("ack-effects lifts ambiguous mode: the acknowledgement is durable and a new mutating call parks again", async () => {
    const workload = gatedWorkload();
    const { daemon, interruptId } = await parkedDaemon(workload, { SPAR_FAILPOINTS: "svc.gate.after-call" });
    await approveAndDie(daemon, interruptId);
    const again = await restart(workload, daemon.sessionDb, PROPOSE);
    const acked = await postTo(again, "/ack-effects", { session_id: "incident-k1", reason: "checked the cluster" });
    expect(acked.status).toBe(202);
    expect(acked.body).toMatchObject({ status: "acknowledged", acknowledged: 1, state: "idle" });
    const injected = await injectIncident(again, "k1");
    expect(injected.body.state).toBe("paused");
    expect(injected.pending[0]?.message).toBe("Approve mutating call apply_change(replicas=10)?");
    expect((await postTo(again, "/ack-effects", { session_id: "incident-k1" })).body).toMatchObject({
      acknowledged: 0,
    });
    expect((await postTo(again, "/ack-effects", { session_id: "incident-none" })).status).toBe(404);
    await again.sigterm();
    expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
    const ledger = await workerLedger(daemon.sessionDb);
    expect(ledger.ambiguous()).toEqual([]);
    expect(ledger.state()).toBe("paused");
  });
}

for (const store of svcStores("gate_crash")) describe(store.engine, () => scenarios(store));
