/**
 * svc's AG-UI listener, session-id injection (spec: Session record, AG-UI listener): a client
 * never names a raw session id; ids derive from `threadId` / `runId` under `agui-`, a reserved
 * `:mast-ops` id and ids that are not printable tokens are refused 400 before the stream opens
 * (a thread owned by another caller: svc-agui-auth.test.ts, svc-agui-tenant-threads.test.ts).
 * Under `per_run` an interrupt id names its session (D299): a forged one reaches no session the
 * caller may not write.
 */
import { expect, test } from "bun:test";
import { countedCalls } from "../fixtures/mcp/counting.ts";
import { AGUI_SECRET, agentSaying, aguiWorkload, runOnce, signedToken, startAgui } from "../support/agui-daemon.ts";
import { daemonScope } from "../support/daemon-scope.ts";
import { APPLY } from "../support/gated-workload.ts";
import { call, say } from "../support/scripted.ts";

const scope = daemonScope();

const proposal = (replicas: number) => [
  call("worker", { request: `scale web to ${replicas}` }),
  call(APPLY, { replicas }),
];

const raw = (url: string, input: Record<string, unknown>) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ messages: [{ id: "m", role: "user", content: "hi" }], ...input }),
  });

test("a threadId deriving a reserved :mast-ops session is refused 400 before the stream", async () => {
  const { url } = await startAgui(scope, aguiWorkload(), [say("x")]);
  await expect(runOnce(agentSaying(url, "incident-1:mast-ops", "hi"))).rejects.toThrow(/HTTP 400.*reserved/);
});

test("ids with spaces, control characters or over 200 characters, and a missing runId, are refused 400", async () => {
  const { url } = await startAgui(scope, aguiWorkload(), [say("x")]);
  for (const input of [
    { threadId: "a b", runId: "r" },
    { threadId: "a\nb", runId: "r" },
    { threadId: "t".repeat(201), runId: "r" },
    { threadId: "t" },
    { threadId: "t", runId: "r", messages: "not a list" },
  ]) {
    const response = await raw(url, input);
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toContain("application/json");
  }
});

test("a run with no user text is refused 400, not run", async () => {
  const { url } = await startAgui(scope, aguiWorkload(), [say("x")]);
  const response = await raw(url, { threadId: "t-empty", runId: "r", messages: [] });
  expect(response.status).toBe(400);
  expect(((await response.json()) as { error: string }).error).toContain("no user message");
});

test("per_run: an interrupt id naming another caller's session, or a session outside agui-, answers nothing (409)", async () => {
  const workload = aguiWorkload({ sessionModel: "per_run" });
  const { url } = await startAgui(scope, workload, proposal(3), { env: { SVC_AGUI_TOKEN: AGUI_SECRET } });
  const as = (sub: string) => ({ authorization: `Bearer ${signedToken({ sub })}` });
  const parked = await runOnce(agentSaying(url, "t-alice", "scale web to 3", as("alice")), { runId: "a-1" });
  const id = String(parked.interrupts?.[0]?.id);
  expect(id).toStartWith("agui-a-1/");
  const inner = id.slice(id.lastIndexOf("/") + 1);
  for (const forged of [id, `incident-x/${inner}`, `svc/${inner}`]) {
    const mallory = agentSaying(url, "t-mallory", "approve", as("mallory")).use((input, next) =>
      next.run({ ...input, parentRunId: "m-0" }),
    );
    await expect(
      runOnce(mallory, {
        runId: `m-${forged.length}`,
        resume: [{ interruptId: forged, status: "resolved", payload: { verdict: "approve" } }],
      }),
    ).rejects.toThrow(/HTTP 409.*no open interrupt/);
  }
  expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);
});
