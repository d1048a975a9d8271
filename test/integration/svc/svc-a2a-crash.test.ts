/**
 * kill -9 of the daemon while an A2A task is `input-required` (issue 17): after a restart on the
 * same store `tasks/get` (the 0.3.14 client) reports the task as it was, with the same question;
 * the operator's approval through /resume completes the same task id, and the tool ran once.
 */
import { expect, test } from "bun:test";
import { ClientFactory, JsonRpcTransportFactory } from "a2a03/client";
import type { Task } from "a2a03";
import { countedCalls } from "../../fixtures/mcp/counting.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { APPLY, resume } from "../../support/gated-workload.ts";
import { call, say } from "../../support/scripted.ts";
import { A2A_SECRET, a2aWorkload, bearerFetch, startA2aDaemon, textMessage } from "../../support/a2a-daemon.ts";

const scope = daemonScope();

const PROPOSE = [call("worker", { request: "scale web to 10" }), call(APPLY, { replicas: 10 })];
const FINISH = [call("finish_task", { result: "done" }), say("scaled")];

function client(url: string) {
  const fetchImpl = bearerFetch(A2A_SECRET);
  return new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl })] }).createFromUrl(url);
}

test("kill -9 while a task is input-required: after the restart tasks/get reports it, the approval completes it, the tool ran once", async () => {
  const workload = a2aWorkload();
  const first = await startA2aDaemon(scope, PROPOSE, { workload });
  const task = (await (await client(first.a2aUrl)).sendMessage({ message: textMessage("scale web") as never })) as Task;
  expect(task.status.state).toBe("input-required");
  const question = (task.status.message?.parts[0] as { text: string }).text;
  const interruptId = /^(\S+): Approve/m.exec(question)?.[1] ?? "";
  expect(interruptId).not.toBe("");
  await first.daemon.kill9();

  const second = await startA2aDaemon(scope, FINISH, { workload, sessionDb: first.daemon.sessionDb });
  const a2a = await client(second.a2aUrl);
  const after = await a2a.getTask({ id: task.id });
  expect(after).toMatchObject({ id: task.id, contextId: task.contextId, status: { state: "input-required" } });
  expect((after.status.message?.parts[0] as { text: string }).text).toContain(interruptId);
  expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);

  const answered = await resume(second.daemon, task.id, interruptId, { verdict: "approve" });
  expect(answered.status).toBe(202);
  const done = await a2a.getTask({ id: task.id });
  expect(done.status.state).toBe("completed");
  expect(done.artifacts?.[0]?.parts[0]).toMatchObject({ kind: "text", text: "scaled" });
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
});
