/**
 * svc lets go of a quiet session (D319): with `--session-idle-timeout` short, an incident parked
 * at an approval leaves memory (the `svc_loaded_sessions` gauge falls to 0, its coordinator's and
 * specialist's state dropped with the actors), and the approval still lands afterwards: the
 * session, its gate and its ledger rebuild from the store, the approved call runs once and the
 * incident completes.
 */
import { expect, test } from "bun:test";
import { countedCalls } from "../../fixtures/mcp/counting.ts";
import { type Daemon, waitFor } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import {
  APPLY,
  AUTH,
  gatedDaemonOptions,
  gatedWorkload,
  injectIncident,
  readLive,
  resume,
} from "../../support/gated-workload.ts";
import { call, say } from "../../support/scripted.ts";

const scope = daemonScope();

async function loadedSessions(daemon: Daemon): Promise<number> {
  const text = await (await fetch(`${daemon.baseUrl}/metrics`, { headers: AUTH })).text();
  const value = /^svc_loaded_sessions (\d+)$/m.exec(text)?.[1];
  if (value === undefined) throw new Error(`no svc_loaded_sessions gauge in:\n${text}`);
  return Number(value);
}

test("a parked incident evicted while idle comes back for its approval: the call runs once and the incident completes", async () => {
  const workload = gatedWorkload();
  const daemon = await scope.start(
    gatedDaemonOptions(
      workload,
      [
        call("worker", { request: "scale web to 6" }),
        call(APPLY, { replicas: 6 }),
        call("finish_task", { result: "scaled" }),
        say("done"),
      ],
      { args: ["--session-idle-timeout=300ms"] },
    ),
  );
  const parked = await injectIncident(daemon, "e1");
  expect(parked.status).toBe(202);
  const interruptId = parked.pending[0]?.interrupt_id ?? "";
  expect(await loadedSessions(daemon)).toBeGreaterThanOrEqual(2);
  await waitFor(async () => ((await loadedSessions(daemon)) === 0 ? true : undefined), 10_000, "the eviction");
  const approved = await resume(daemon, "incident-e1", interruptId, { verdict: "approve" });
  expect(approved.status).toBe(202);
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
  // The rebuilt coordinator carried the incident to its end: its last answer is committed.
  const rows = await readLive(daemon.sessionDb, (store) => store.rows({ app: "svc", id: "incident-e1" }));
  const answers = rows.map((row) => row.event).filter((event) => event.kind === "model-response");
  expect(answers.at(-1)).toMatchObject({ text: "done", turnComplete: true });
});
