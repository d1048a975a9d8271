/**
 * Task ids an A2A caller must not reach on svc: only `a2a-` sessions are tasks, so an incident
 * session (`incident-*`), an ops row id, a path-like id or another tenant's task is not found
 * (-32001) on every method that names a task (tasks/resubscribe included), and a send naming one
 * as its taskId runs no turn there.
 */
import { beforeAll, expect, test } from "bun:test";
import { daemonScope } from "../support/daemon-scope.ts";
import { injectIncident } from "../support/gated-workload.ts";
import { say } from "../support/scripted.ts";
import { type A2aDaemon, rpc, signJwt, startA2aDaemon, textMessage } from "../support/a2a-daemon.ts";

const scope = daemonScope({ per: "file" });
let served: A2aDaemon;
/** No token on either listener: both callers are the local caller, so the session ACL would let an incident through. */
let open: A2aDaemon;
beforeAll(async () => {
  served = await startA2aDaemon(scope, [say("tenant answer")]);
  open = await startA2aDaemon(scope, [say("incident answered")], { token: null, injectToken: false });
  await injectIncident(open.daemon, "k1", {});
});

test("an incident session's id is not a task, even to a caller its ACL admits: tasks/get, tasks/cancel and a continuing send are -32001", async () => {
  for (const method of ["tasks/get", "tasks/cancel", "tasks/resubscribe"])
    expect((await rpc(open.a2aUrl, method, { id: "incident-k1" }, null)).body.error.code).toBe(-32001);
  for (const method of ["message/send", "message/stream"]) {
    const params = { message: textMessage("abort it", { taskId: "incident-k1" }) };
    expect((await rpc(open.a2aUrl, method, params, null)).body.error.code).toBe(-32001);
  }
  // The incident was not aborted: it still takes an acknowledgement (an aborted one is refused 409).
  const acked = await fetch(`${open.daemon.baseUrl}/ack-effects`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ session_id: "incident-k1" }),
  });
  expect(acked.status).toBe(202);
});

test("reserved, path-like and prefix-less ids are -32001", async () => {
  for (const id of ["incident-k1:svc-ops", "a2a-../incident-k1", "../a2a-x", "A2A-abc", "", "a2a-"]) {
    const answer = await rpc(open.a2aUrl, "tasks/get", { id }, null);
    expect(answer.body.error.code).toBe(-32001);
  }
});

test("another tenant's task is not found (-32001), not forbidden: its existence is not disclosed", async () => {
  const mine = await rpc(served.a2aUrl, "message/send", { message: textMessage("hi") }, signJwt({ tenant: "team-a" }));
  const id = mine.body.result.id as string;
  const theirs = signJwt({ tenant: "team-b" });
  expect((await rpc(served.a2aUrl, "tasks/get", { id }, theirs)).body.error.code).toBe(-32001);
  expect((await rpc(served.a2aUrl, "tasks/cancel", { id }, theirs)).body.error.code).toBe(-32001);
  expect((await rpc(served.a2aUrl, "tasks/resubscribe", { id }, theirs)).body.error.code).toBe(-32001);
  const send = await rpc(served.a2aUrl, "message/send", { message: textMessage("x", { taskId: id }) }, theirs);
  expect(send.body.error.code).toBe(-32001);
  expect((await rpc(served.a2aUrl, "tasks/get", { id }, signJwt({ tenant: "team-a" }))).body.result.status.state).toBe(
    "completed",
  );
});
