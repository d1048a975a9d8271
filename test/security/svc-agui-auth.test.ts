/**
 * svc's AG-UI listener, authentication and scopes (spec: Authentication): the run endpoint needs
 * `SVC_AGUI_TOKEN` (the secret, or an HS256 JWT signed with it), a token without the workload's
 * `auth.scopes` is a 403, and the approver of an approval is the authenticated caller, never a
 * field of the payload. Each attack through the real `@ag-ui/client` HttpAgent; the discovery
 * descriptor stays public.
 */
import { expect, test } from "bun:test";
import { HttpAgent, buildResumeArray } from "@ag-ui/client";
import { countedCalls } from "../fixtures/mcp/counting.ts";
import {
  AGUI_SECRET,
  type AguiDaemon,
  agentSaying,
  aguiWorkload,
  runOnce,
  signedToken,
  startAgui,
} from "../support/agui-daemon.ts";
import { daemonScope } from "../support/daemon-scope.ts";
import { APPLY, type GatedWorkload } from "../support/gated-workload.ts";
import { call, say } from "../support/scripted.ts";

const scope = daemonScope({ per: "file" });
let started: { agui: AguiDaemon; workload: GatedWorkload } | undefined;

/** One daemon for the file: scope `agui.run` required, the script two approvals then plain answers. */
async function daemon() {
  if (started) return started;
  const workload = aguiWorkload({ scopes: ["agui.run"] });
  const agui = await startAgui(
    scope,
    workload,
    // One approval for the approver test, one for the reserved-identity test, then plain answers.
    [1, 2].flatMap(() => [
      call("worker", { request: "scale" }),
      call(APPLY, { replicas: 3 }),
      call("finish_task", { result: "ok" }),
      say("done"),
    ]),
    { env: { SVC_AGUI_TOKEN: AGUI_SECRET } },
  );
  started = { agui, workload };
  return started;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const runner = signedToken({ sub: "bob", scope: "agui.run" });

test("a run without a bearer is refused 401 before any stream", async () => {
  const { agui } = await daemon();
  await expect(runOnce(agentSaying(agui.url, "t-a1", "hi"))).rejects.toThrow(/HTTP 401/);
  const raw = await fetch(agui.url, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  expect(raw.status).toBe(401);
  expect(raw.headers.get("www-authenticate")).toBe('Bearer realm="agui"');
});

test("a wrong secret, a JWT signed with another key and an alg:none JWT are each refused 401", async () => {
  const { agui } = await daemon();
  const unsigned = `${Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url")}.${Buffer.from(JSON.stringify({ sub: "eve", scope: "agui.run" })).toString("base64url")}.`;
  for (const token of ["not-the-secret", signedToken({ sub: "eve", scope: "agui.run" }, "other-key"), unsigned]) {
    await expect(runOnce(agentSaying(agui.url, "t-a2", "hi", bearer(token)))).rejects.toThrow(/HTTP 401/);
  }
});

test("an expired JWT is refused 401", async () => {
  const { agui } = await daemon();
  const expired = signedToken({ sub: "bob", scope: "agui.run", exp: Math.floor(Date.now() / 1000) - 3600 });
  await expect(runOnce(agentSaying(agui.url, "t-a3", "hi", bearer(expired)))).rejects.toThrow(/HTTP 401.*expired/);
});

test("a valid token lacking the workload's scope is refused 403, and so is the bare secret (it holds no scopes)", async () => {
  const { agui } = await daemon();
  const noScope = signedToken({ sub: "bob", scope: "other" });
  await expect(runOnce(agentSaying(agui.url, "t-a4", "hi", bearer(noScope)))).rejects.toThrow(/HTTP 403.*agui\.run/);
  await expect(runOnce(agentSaying(agui.url, "t-a4", "hi", bearer(AGUI_SECRET)))).rejects.toThrow(/HTTP 403/);
});

test("an approver named in the resume payload is overwritten by the authenticated caller; another tenant cannot answer", async () => {
  const { agui, workload } = await daemon();
  const agent = agentSaying(agui.url, "t-a5", "scale", bearer(runner));
  const parked = await runOnce(agent);
  const id = String(parked.interrupts?.[0]?.id);
  const resume = buildResumeArray(agent.pendingInterrupts, {
    [id]: { status: "resolved", payload: { verdict: "approve", approver: "the-ceo" } },
  });
  const intruder = new HttpAgent({
    url: agui.url,
    threadId: "t-a5",
    headers: bearer(signedToken({ tenant: "other-co", scope: "agui.run" })),
  });
  await expect(runOnce(intruder, { resume })).rejects.toThrow(/HTTP 409/);
  expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);
  const done = await runOnce(agent, { resume });
  expect(done.outcome).toBe("success");
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
  const audit = await (
    await fetch(`${agui.daemon.baseUrl}/metrics`, { headers: { authorization: "Bearer gate-s3cret" } })
  ).text();
  expect(audit).toContain('svc_gate_outcomes_total{outcome="apply"} 1');
  // The audit trail (stderr) names the token's subject as the approver, never the payload's.
  expect(agui.daemon.log()).toMatch(/"outcome":"apply"[^\n]*"approver":"bob"|"approver":"bob"[^\n]*"outcome":"apply"/);
  expect(agui.daemon.log()).not.toContain("the-ceo");
});

test("a token whose tenant is the operator's identity cannot answer another tenant's gate: 401, nothing applied (D328)", async () => {
  const { agui, workload } = await daemon();
  const before = countedCalls(workload.countDir, "apply_change").length;
  const agent = agentSaying(agui.url, "t-a6", "scale", bearer(runner));
  const parked = await runOnce(agent);
  const id = String(parked.interrupts?.[0]?.id);
  const resume = buildResumeArray(agent.pendingInterrupts, {
    [id]: { status: "resolved", payload: { verdict: "approve" } },
  });
  for (const claims of [{ tenant: "svc-inject" }, { sub: "svc-agui" }, { tenant: "svc:internal" }, { sub: "local" }]) {
    const impostor = new HttpAgent({
      url: agui.url,
      threadId: "t-a6",
      headers: bearer(signedToken({ ...claims, scope: "agui.run" })),
    });
    await expect(runOnce(impostor, { resume })).rejects.toThrow(/HTTP 401.*is refused/);
  }
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(before);
  expect(agui.daemon.log()).not.toMatch(/"approver":"(svc-inject|svc-agui|svc:internal|local)"/);
  // The control: the run's own tenant answers it, and the call runs once.
  expect((await runOnce(agent, { resume })).outcome).toBe("success");
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(before + 1);
});

test("the discovery descriptor is public and names the required scopes", async () => {
  const { agui } = await daemon();
  const response = await fetch(`${agui.base}/agui/agents.json`);
  expect(response.status).toBe(200);
  expect(await response.json()).toMatchObject([{ name: "gated", auth: { scopes: ["agui.run"] } }]);
});
