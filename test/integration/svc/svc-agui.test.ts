/**
 * svc's AG-UI listener end to end with the real `@ag-ui/client` HttpAgent (unmodified): every
 * stream below passed the client's own schema and ordering checks (it throws on a malformed one).
 * The gated workload (a coordinator delegating to `worker`, whose `apply_change` on the counting
 * MCP server parks for approval) runs on a scripted model; the counting server's `.calls` file
 * proves how often the gated call ran.
 */
import { expect, test } from "bun:test";
import { HttpAgent, buildResumeArray } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { countedCalls } from "../../fixtures/mcp/counting.ts";
import {
  AGUI_SECRET,
  type AgentRun,
  agentSaying,
  aguiWorkload,
  runOnce,
  signedToken,
  startAgui,
  types,
} from "../../support/agui-daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { APPLY, postTo, storedRows } from "../../support/gated-workload.ts";
import { call, say } from "../../support/scripted.ts";

const scope = daemonScope();

/** The coordinator delegates, the worker proposes apply_change(replicas), and after the answer finishes. */
const proposal = (replicas: number) => [
  call("worker", { request: `scale web to ${replicas}` }),
  call(APPLY, { replicas }),
  call("finish_task", { result: "done" }),
  say("handled"),
];

/** Every event the client accepted also passes the protocol's published event schema. */
function expectValid(run: AgentRun): void {
  for (const event of run.events) expect(EventSchema.safeParse(event).success).toBe(true);
}

test("a plain run streams RUN_STARTED, the echoed state, the answer as a text message, then RUN_FINISHED success", async () => {
  const { url, base } = await startAgui(scope, aguiWorkload(), [say("hello from svc")]);
  const agents = await (await fetch(`${base}/agui/agents.json`)).json();
  expect(agents).toEqual([
    {
      name: "gated",
      endpoint: "/agui/gated",
      description: "The gated worker over AG-UI.",
      input_schema: { type: "object" },
      auth: { scopes: [] },
    },
  ]);
  const agent = agentSaying(url, "t-plain", "hi");
  agent.setState({ draft: 3 });
  const run = await runOnce(agent);
  expectValid(run);
  expect(types(run)).toEqual([
    "RUN_STARTED",
    "STATE_SNAPSHOT",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "RUN_FINISHED",
  ]);
  expect(run.outcome).toBe("success");
  expect(run.events[1]).toMatchObject({ snapshot: { draft: 3 } });
  expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "hello from svc" });
});

test("an approval parks the run as an interrupt; a resume built with buildResumeArray approves it as the caller and completes", async () => {
  const workload = aguiWorkload();
  const { url, daemon } = await startAgui(scope, workload, proposal(10), { env: { SVC_AGUI_TOKEN: AGUI_SECRET } });
  const token = signedToken({ sub: "alice", tenant: "acme" });
  const agent = agentSaying(url, "t-gate", "scale web to 10", { authorization: `Bearer ${token}` });
  const parked = await runOnce(agent);
  expectValid(parked);
  expect(types(parked)).toEqual([
    "RUN_STARTED",
    "STATE_SNAPSHOT",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "TOOL_CALL_RESULT",
    "RUN_FINISHED",
  ]);
  expect(parked.events[2]).toMatchObject({ toolCallName: "worker" });
  expect(parked.outcome).toBe("interrupt");
  const interrupt = parked.interrupts?.[0];
  expect(parked.interrupts).toHaveLength(1);
  expect(interrupt).toMatchObject({
    reason: "tool_approval",
    message: "Approve mutating call apply_change(replicas=10)?",
    responseSchema: { required: ["verdict"] },
  });
  expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);
  expect(agent.pendingInterrupts).toHaveLength(1);

  const resume = buildResumeArray(agent.pendingInterrupts, {
    [String(interrupt?.id)]: { status: "resolved", payload: { verdict: "approve", approver: "mallory" } },
  });
  const done = await runOnce(agent, { resume });
  expectValid(done);
  expect(done.outcome).toBe("success");
  expect(types(done)).toContain("TEXT_MESSAGE_CONTENT");
  expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "handled" });
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);

  await daemon.sigterm();
  const worker = JSON.stringify(await storedRows(daemon.sessionDb, "svc.worker", "agui-t-gate"));
  expect(worker).toContain('"approver":"acme"');
  expect(worker).not.toContain("mallory");
});

test("a cancelled resume rejects the call: nothing runs and the run completes", async () => {
  const workload = aguiWorkload();
  const { url } = await startAgui(scope, workload, [
    call("worker", { request: "scale web to 4" }),
    call(APPLY, { replicas: 4 }),
    call("finish_task", { result: "refused" }),
    say("left as is"),
  ]);
  const agent = agentSaying(url, "t-cancel", "scale web to 4");
  const parked = await runOnce(agent);
  const id = String(parked.interrupts?.[0]?.id);
  const done = await runOnce(agent, {
    resume: buildResumeArray(agent.pendingInterrupts, { [id]: { status: "cancelled" } }),
  });
  expectValid(done);
  expect(done.outcome).toBe("success");
  expect(agent.messages.at(-1)).toMatchObject({ content: "left as is" });
  expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);
});

test("a resume naming no open interrupt is a 409, and so is a fresh run on a thread still waiting", async () => {
  const workload = aguiWorkload();
  const { url } = await startAgui(scope, workload, proposal(2));
  const agent = agentSaying(url, "t-409", "scale web to 2");
  await runOnce(agent);
  const stranger = agentSaying(url, "t-409", "again");
  await expect(
    runOnce(stranger, {
      resume: [{ interruptId: "gate-not-there", status: "resolved", payload: { verdict: "approve" } }],
    }),
  ).rejects.toThrow(/HTTP 409.*no open interrupt/);
  await expect(runOnce(stranger)).rejects.toThrow(/HTTP 409.*waits on interrupts/);
  const fresh = agentSaying(url, "t-409-none", "hi");
  await expect(runOnce(fresh, { resume: [{ interruptId: "gate-x", status: "cancelled" }] })).rejects.toThrow(
    /HTTP 409/,
  );
  expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);
});

test("per_run: each run is its own session, and a resume names the parked run in parentRunId", async () => {
  const workload = aguiWorkload({ sessionModel: "per_run" });
  const { url } = await startAgui(scope, workload, proposal(5));
  const agent = agentSaying(url, "t-per-run", "scale web to 5");
  const parked = await runOnce(agent, { runId: "run-1" });
  expect(parked.outcome).toBe("interrupt");
  const resume = buildResumeArray(agent.pendingInterrupts, {
    [String(parked.interrupts?.[0]?.id)]: { status: "resolved", payload: { verdict: "approve" } },
  });
  await expect(runOnce(agent.clone(), { runId: "run-2", resume })).rejects.toThrow(/HTTP 400.*parentRunId/);
  // RunAgentParameters has no parentRunId: the client's own middleware hook adds it to the input.
  const withParent = agent.clone().use((input, next) => next.run({ ...input, parentRunId: "run-1" }));
  const done = await runOnce(withParent, { runId: "run-3", resume });
  expectValid(done);
  expect(done.events[0]).toMatchObject({ type: "RUN_STARTED", runId: "run-3", parentRunId: "run-1" });
  expect(done.outcome).toBe("success");
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
});

test("a resume on a session an operator aborted ends in RUN_ERROR aborted, and the call never runs", async () => {
  const workload = aguiWorkload();
  const { url, daemon } = await startAgui(scope, workload, proposal(7));
  const agent = agentSaying(url, "t-abort", "scale web to 7");
  const parked = await runOnce(agent);
  const aborted = await postTo(daemon, "/abort", { session_id: "agui-t-abort", reason: "not today" });
  expect(aborted.status).toBe(202);
  const id = String(parked.interrupts?.[0]?.id);
  const run = await runOnce(agent, {
    resume: buildResumeArray(agent.pendingInterrupts, {
      [id]: { status: "resolved", payload: { verdict: "approve" } },
    }),
  });
  expectValid(run);
  expect(types(run)).toEqual(["RUN_STARTED", "STATE_SNAPSHOT", "RUN_ERROR"]);
  expect(run.runError).toMatchObject({ code: "aborted" });
  expect(run.runError?.message).toContain("aborted");
  expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);
});

test("kill -9 while a run waits on an approval: after a restart the same interrupt resumes, completes, and the call ran once", async () => {
  const workload = aguiWorkload();
  const first = await startAgui(scope, workload, proposal(9).slice(0, 2));
  const agent = agentSaying(first.url, "t-crash", "scale web to 9");
  const parked = await runOnce(agent);
  const id = String(parked.interrupts?.[0]?.id);
  await first.daemon.kill9();
  const second = await startAgui(scope, workload, [call("finish_task", { result: "done" }), say("handled")], {
    sessionDb: first.daemon.sessionDb,
  });
  const resumed = new HttpAgent({ url: second.url, threadId: "t-crash" });
  const done = await runOnce(resumed, {
    resume: [{ interruptId: id, status: "resolved", payload: { verdict: "approve" } }],
  });
  expectValid(done);
  expect(done.outcome).toBe("success");
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
});

test("per_run: a run that parks again is resumed naming that run as parent, and the session carries on", async () => {
  const workload = aguiWorkload({ sessionModel: "per_run" });
  const { url } = await startAgui(scope, workload, [
    call("worker", { request: "scale twice" }),
    call(APPLY, { replicas: 1 }),
    call(APPLY, { replicas: 2 }),
    call("finish_task", { result: "done" }),
    say("handled twice"),
  ]);
  const approve = (agent: HttpAgent, id: unknown) =>
    buildResumeArray(agent.pendingInterrupts, {
      [String(id)]: { status: "resolved", payload: { verdict: "approve" } },
    });
  const agent = agentSaying(url, "t-chain", "scale twice");
  const first = await runOnce(agent, { runId: "c-1" });
  const second = await runOnce(
    agent.clone().use((input, next) => next.run({ ...input, parentRunId: "c-1" })),
    { runId: "c-2", resume: approve(agent, first.interrupts?.[0]?.id) },
  );
  expect(second.outcome).toBe("interrupt");
  expect(second.interrupts?.[0]?.message).toBe("Approve mutating call apply_change(replicas=2)?");
  const resumer = agent.clone();
  resumer.pendingInterrupts = second.interrupts ?? [];
  const third = await runOnce(
    resumer.use((input, next) => next.run({ ...input, parentRunId: "c-2" })),
    { runId: "c-3", resume: approve(resumer, second.interrupts?.[0]?.id) },
  );
  expectValid(third);
  expect(third.outcome).toBe("success");
  expect(countedCalls(workload.countDir, "apply_change").map((counted) => counted.args)).toEqual([
    { replicas: 1 },
    { replicas: 2 },
  ]);
});

test("per_run after kill -9: a run that parked again resumes on a new daemon, its interrupt id naming the session", async () => {
  const workload = aguiWorkload({ sessionModel: "per_run" });
  const first = await startAgui(scope, workload, [
    call("worker", { request: "scale twice" }),
    call(APPLY, { replicas: 1 }),
    call(APPLY, { replicas: 2 }),
  ]);
  const agent = agentSaying(first.url, "t-chain-crash", "scale twice");
  const parked = await runOnce(agent, { runId: "k-1" });
  const firstId = String(parked.interrupts?.[0]?.id);
  expect(firstId).toStartWith("agui-k-1/");
  const second = await runOnce(
    agent.clone().use((input, next) => next.run({ ...input, parentRunId: "k-1" })),
    { runId: "k-2", resume: [{ interruptId: firstId, status: "resolved", payload: { verdict: "approve" } }] },
  );
  expect(second.outcome).toBe("interrupt");
  const secondId = String(second.interrupts?.[0]?.id);
  await first.daemon.kill9();
  const restarted = await startAgui(scope, workload, [call("finish_task", { result: "done" }), say("handled")], {
    sessionDb: first.daemon.sessionDb,
  });
  // A fresh client on the new daemon: nothing of the earlier runs is remembered in memory anywhere.
  const resumer = new HttpAgent({ url: restarted.url, threadId: "t-chain-crash" }).use((input, next) =>
    next.run({ ...input, parentRunId: "k-2" }),
  );
  const done = await runOnce(resumer, {
    runId: "k-3",
    resume: [{ interruptId: secondId, status: "resolved", payload: { verdict: "approve" } }],
  });
  expectValid(done);
  expect(done.outcome).toBe("success");
  expect(countedCalls(workload.countDir, "apply_change").map((counted) => counted.args)).toEqual([
    { replicas: 1 },
    { replicas: 2 },
  ]);
});
