/**
 * Abort is terminal across an incident's sessions (spec: States and transitions, `sessions
 * abort`): the coordinator (app `svc`) and its specialists (app `svc.<name>`, the same id) each get
 * the durable marker, the turn in flight is cancelled even while the coordinator waits on a
 * specialist, the pause token and its timer are void, and every later turn kind is refused 409:
 * inject, a question's resume (nothing recorded), a token resume, and attach turns on either
 * session; a second abort is 409.
 */
import { expect, test } from "bun:test";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { GateLedger } from "../../../src/svc/gate/gate-ledger.ts";
import { type Daemon, waitFor } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import {
  APPLY,
  gatedDaemonOptions,
  gatedWorkload,
  injectIncident,
  postTo,
  resume,
  storedRows,
} from "../../support/gated-workload.ts";
import { call, say, stall } from "../../support/scripted.ts";

const scope = daemonScope();
const ATTACH = { authorization: "Bearer attach-s3cret" };
const ABORTED = 'session "incident-x1" is aborted (wrong cluster)';

function attachUrl(daemon: Daemon): string {
  const match = /attach surface at (http:\/\/[^ ]+) /.exec(daemon.log());
  if (!match?.[1]) throw new Error(`no attach surface in the log:\n${daemon.log()}`);
  return match[1];
}

async function attachInject(daemon: Daemon, app: string) {
  const response = await fetch(`${attachUrl(daemon)}/sessions/${app}/incident-x1/inject`, {
    method: "POST",
    headers: { "content-type": "application/json", ...ATTACH },
    body: JSON.stringify({ message: "go on" }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

test("abort voids the token and refuses inject, resume and attach turns on every session of the incident; re-abort 409", async () => {
  const workload = gatedWorkload();
  const daemon = await scope.start(
    gatedDaemonOptions(workload, [call("worker", { request: "scale" }), call(APPLY, { replicas: 10 })], {
      args: ["--attach-listen=127.0.0.1:0"],
      env: { SVC_ATTACH_TOKEN: "attach-s3cret" },
    }),
  );
  const injected = await injectIncident(daemon, "x1");
  expect(injected.body.state).toBe("paused");
  const interruptId = injected.pending[0]?.interrupt_id ?? "";
  const resumeAt = Date.now() + 3000;
  const pause = await postTo(daemon, "/pause", {
    session_id: "incident-x1",
    reason: "operator",
    resume_at: new Date(resumeAt).toISOString(),
  });
  expect(pause.status).toBe(200);

  expect(await postTo(daemon, "/abort", { session_id: "incident-x1", reason: "wrong cluster" })).toEqual({
    status: 202,
    body: { status: "aborted", session_id: "incident-x1" },
  });
  const refusal = { status: 409, body: { error: expect.stringContaining(ABORTED) } };
  expect(await postTo(daemon, "/resume", { token: pause.body.token })).toMatchObject(refusal);
  expect(await injectIncident(daemon, "x1")).toMatchObject(refusal);
  expect(await resume(daemon, "incident-x1", interruptId, { verdict: "approve" })).toMatchObject(refusal);
  expect(await attachInject(daemon, "svc")).toMatchObject(refusal);
  expect(await attachInject(daemon, "svc.worker")).toMatchObject({
    status: 409,
    body: { error: expect.stringContaining("is aborted (wrong cluster)") },
  });
  expect((await postTo(daemon, "/abort", { session_id: "incident-x1" })).status).toBe(409);
  expect((await postTo(daemon, "/extend-token", { token: pause.body.token, ttl: "1h" })).status).toBe(409);
  // The timer was voided: past its time the session is still aborted, nothing resumed.
  // Time under test: half a second past resume_at.
  await Bun.sleep(resumeAt + 500 - Date.now());
  expect(await postTo(daemon, "/resume", { token: pause.body.token })).toMatchObject(refusal);
  await daemon.sigterm();

  const store = SqliteStore.open(daemon.sessionDb);
  try {
    for (const app of ["svc", "svc.worker"])
      expect((await store.getSession({ app, id: "incident-x1" }))?.abort).toMatchObject({ reason: "wrong cluster" });
  } finally {
    await store.close();
  }
  // The refused resume recorded nothing: the question is still the one that was pending.
  const ledger = GateLedger.fold(await storedRows(daemon.sessionDb, "svc.worker", "incident-x1"));
  expect(ledger.pending().map((entry) => entry.call.interruptId)).toEqual([interruptId]);
  const coordinator = await storedRows(daemon.sessionDb, "svc", "incident-x1");
  expect(coordinator.some((row) => row.event.kind === "audit" && row.event.name === "svc-pause-resume")).toBe(false);
}, 60_000);

test("abort while the coordinator waits on a specialist's turn cancels both turns and marks both sessions", async () => {
  const workload = gatedWorkload();
  const daemon = await scope.start(
    gatedDaemonOptions(workload, [call("worker", { request: "look" }), stall("thinking", 20_000), say("late")], {
      args: ["--attach-listen=127.0.0.1:0"],
      env: { SVC_ATTACH_TOKEN: "attach-s3cret" },
    }),
  );
  const waiting = injectIncident(daemon, "x1");
  // The worker's turn has started once its session has a row past its prompt.
  await waitFor(
    async () => {
      const response = await fetch(`${attachUrl(daemon)}/sessions/svc.worker/incident-x1/status`, { headers: ATTACH });
      if (response.status !== 200) return undefined;
      return ((await response.json()) as { turn_in_flight?: boolean }).turn_in_flight ? true : undefined;
    },
    10_000,
    "the worker's turn",
  );
  const started = Date.now();
  const aborted = await postTo(daemon, "/abort", { session_id: "incident-x1", reason: "wrong cluster" });
  expect(aborted.status).toBe(202);
  expect(Date.now() - started).toBeLessThan(10_000);
  expect((await waiting).status).toBe(409);
  await daemon.sigterm();
  const store = SqliteStore.open(daemon.sessionDb);
  try {
    for (const app of ["svc", "svc.worker"])
      expect((await store.getSession({ app, id: "incident-x1" }))?.abort?.reason).toBe("wrong cluster");
  } finally {
    await store.close();
  }
}, 60_000);
