/**
 * svc's AG-UI listener, flooding (spec: Limits, Errors): `SVC_AGUI_RATE` / `SVC_AGUI_BURST` is a
 * token bucket per caller and workload; a run over it is a 429 with an advisory `Retry-After`,
 * refused before any stream opens, and another caller's bucket is its own.
 */
import { expect, test } from "bun:test";
import { AGUI_SECRET, agentSaying, aguiWorkload, runOnce, signedToken, startAgui } from "../support/agui-daemon.ts";
import { daemonScope } from "../support/daemon-scope.ts";
import { say } from "../support/scripted.ts";

const scope = daemonScope();

test("a caller over its burst is refused 429 with Retry-After, while another caller still runs", async () => {
  const { url } = await startAgui(scope, aguiWorkload(), [say("one"), say("two"), say("three")], {
    env: { SVC_AGUI_TOKEN: AGUI_SECRET, SVC_AGUI_RATE: "0.01", SVC_AGUI_BURST: "2" },
  });
  const alice = { authorization: `Bearer ${signedToken({ sub: "alice" })}` };
  expect((await runOnce(agentSaying(url, "t-r1", "1", alice))).outcome).toBe("success");
  expect((await runOnce(agentSaying(url, "t-r2", "2", alice))).outcome).toBe("success");
  await expect(runOnce(agentSaying(url, "t-r3", "3", alice))).rejects.toThrow(/HTTP 429/);
  const raw = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...alice },
    body: JSON.stringify({ threadId: "t-r4", runId: "r4", messages: [{ id: "m", role: "user", content: "x" }] }),
  });
  expect(raw.status).toBe(429);
  expect(Number(raw.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(raw.headers.get("content-type")).toContain("application/json");
  const bob = { authorization: `Bearer ${signedToken({ sub: "bob" })}` };
  expect((await runOnce(agentSaying(url, "t-r5", "5", bob))).outcome).toBe("success");
});

test("a malformed SVC_AGUI_RATE fails startup", async () => {
  await expect(startAgui(scope, aguiWorkload(), [say("x")], { env: { SVC_AGUI_RATE: "fast" } })).rejects.toThrow(
    /SVC_AGUI_RATE must be a positive number/,
  );
});
