/**
 * svc's AG-UI listener, another tenant's thread (D343): a fresh run on a thread whose session
 * another JWT tenant holds is refused 409 before any stream opens (it used to open the stream and
 * fail with RUN_ERROR "session not found"), with the same words whether that thread is idle or
 * waits on interrupts, and without its interrupt ids; a fresh thread id still runs. Real svc
 * daemon, real `@ag-ui/client` HttpAgent, tokens signed with the listener's secret.
 */
import { beforeAll, expect, test } from "bun:test";
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
const acme = { authorization: `Bearer ${signedToken({ tenant: "acme", sub: "alice" })}` };
const globex = { authorization: `Bearer ${signedToken({ tenant: "globex", sub: "mallory" })}` };

let agui: AguiDaemon;
let workload: GatedWorkload;
/** The interrupt acme's waiting thread parked on. */
let parkedOn = "";

beforeAll(async () => {
  workload = aguiWorkload();
  // Model calls in order: acme's idle thread, acme's parking thread (coordinator, specialist), globex's own thread.
  agui = await startAgui(
    scope,
    workload,
    [
      say("hello acme"),
      call("worker", { request: "scale web to 4" }),
      call(APPLY, { replicas: 4 }),
      say("hello globex"),
    ],
    { env: { SVC_AGUI_TOKEN: AGUI_SECRET } },
  );
  expect((await runOnce(agentSaying(agui.url, "t-idle", "hi", acme))).outcome).toBe("success");
  const parked = await runOnce(agentSaying(agui.url, "t-wait", "scale web to 4", acme));
  parkedOn = String(parked.interrupts?.[0]?.id);
  expect(parkedOn).toStartWith("gate-");
});

/** A fresh run as raw HTTP, to read the refusal's status, headers and body. */
const freshRun = (threadId: string, headers: Record<string, string>) =>
  fetch(agui.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
    body: JSON.stringify({
      threadId,
      runId: `r-${crypto.randomUUID()}`,
      messages: [{ id: "m", role: "user", content: "mine now" }],
    }),
  });

test("a fresh run on another tenant's idle or waiting thread is a JSON 409 before the stream, the same for both", async () => {
  const bodies: string[] = [];
  for (const thread of ["t-idle", "t-wait"]) {
    const refused = await freshRun(thread, globex);
    expect(refused.status).toBe(409);
    expect(refused.headers.get("content-type")).toContain("application/json");
    const body = (await refused.json()) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(["error"]);
    bodies.push(String(body.error).replace(thread, "<thread>"));
    expect(JSON.stringify(body)).not.toContain(parkedOn);
    expect(JSON.stringify(body)).not.toContain("acme");
  }
  expect(bodies[0]).toBe(bodies[1]);
  expect(bodies[0]).toContain("another threadId");
});

test("through the HttpAgent the refusal is HTTP 409, no RUN_STARTED, and nothing of the thread ran", async () => {
  const events: string[] = [];
  await expect(
    agentSaying(agui.url, "t-wait", "approve it", globex).runAgent(
      {},
      { onEvent: ({ event }) => void events.push(String(event.type)) },
    ),
  ).rejects.toThrow(/HTTP 409/);
  expect(events).toEqual([]);
  expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);
  // The owner's thread still waits on its question.
  const owner = await fetch(agui.url, {
    method: "POST",
    headers: { "content-type": "application/json", ...acme },
    body: JSON.stringify({
      threadId: "t-wait",
      runId: "r-again",
      messages: [{ id: "m", role: "user", content: "again" }],
    }),
  });
  expect(owner.status).toBe(409);
  expect(JSON.stringify(await owner.json())).toContain(parkedOn);
});

test("the other tenant's fresh thread id runs", async () => {
  const run = await runOnce(agentSaying(agui.url, "t-globex", "hi", globex));
  expect(run.outcome).toBe("success");
  expect(run.runError).toBeUndefined();
});
