/**
 * svc's AG-UI listener, cross-origin browser calls (CSRF and CORS; the D? decision): deny by
 * default. Without `--agui-allowed-origins` a foreign Origin's preflight and its run are refused
 * 403; an origin on the list gets its preflight answered before authentication (browsers send no
 * credentials on one) and every answer, a 401 included, names it in Access-Control-Allow-Origin.
 * The bearer is still required: an allowed origin is not a credential.
 */
import { expect, test } from "bun:test";
import { AGUI_SECRET, agentSaying, aguiWorkload, runOnce, startAgui } from "../support/agui-daemon.ts";
import { daemonScope } from "../support/daemon-scope.ts";
import { say } from "../support/scripted.ts";

const scope = daemonScope();
const APP = "https://app.example.com";
const EVIL = "https://evil.example.net";
const body = JSON.stringify({ threadId: "t-o", runId: "r-o", messages: [{ id: "m", role: "user", content: "hi" }] });

const preflight = (url: string, origin: string) =>
  fetch(url, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type",
    },
  });

const post = (url: string, origin: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json", origin, ...headers }, body });

test("without an allow-list, a foreign origin's preflight and its run are refused 403", async () => {
  const { url } = await startAgui(scope, aguiWorkload(), [say("x")]);
  const checked = await preflight(url, APP);
  expect(checked.status).toBe(403);
  expect(checked.headers.get("access-control-allow-origin")).toBeNull();
  const run = await post(url, APP);
  expect(run.status).toBe(403);
  expect(((await run.json()) as { error: string }).error).toContain("cross-origin request refused");
});

test("an allowed origin's preflight is answered; other origins stay refused; the bearer is still required", async () => {
  const { url } = await startAgui(scope, aguiWorkload(), [say("from the browser")], {
    env: { SVC_AGUI_TOKEN: AGUI_SECRET },
    args: [`--agui-allowed-origins=${APP}`],
  });
  const allowed = await preflight(url, APP);
  expect(allowed.status).toBe(204);
  expect(allowed.headers.get("access-control-allow-origin")).toBe(APP);
  expect(allowed.headers.get("access-control-allow-headers")).toContain("authorization");
  expect(allowed.headers.get("access-control-allow-credentials")).toBeNull();
  expect((await preflight(url, EVIL)).status).toBe(403);
  expect((await post(url, EVIL, { authorization: `Bearer ${AGUI_SECRET}` })).status).toBe(403);
  const anonymous = await post(url, APP);
  expect(anonymous.status).toBe(401);
  expect(anonymous.headers.get("access-control-allow-origin")).toBe(APP);
  const run = await runOnce(agentSaying(url, "t-o2", "hi", { authorization: `Bearer ${AGUI_SECRET}`, origin: APP }));
  expect(run.outcome).toBe("success");
});

test("a malformed allowed origin (a path or a wildcard) fails startup", async () => {
  await expect(
    startAgui(scope, aguiWorkload(), [say("x")], { args: ["--agui-allowed-origins=https://*.example.com"] }),
  ).rejects.toThrow(/is not an origin/);
  await expect(
    startAgui(scope, aguiWorkload(), [say("x")], { args: ["--agui-allowed-origins=https://app.example.com/ui"] }),
  ).rejects.toThrow(/is not an origin/);
});
