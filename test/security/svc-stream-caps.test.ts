/**
 * svc's open-stream caps reach its protocol listeners (issue 27 item 4, D334), a real process with
 * `--attach-max-streams-per-caller=1`: an A2A `message/stream` holds a caller's one stream, so its
 * `tasks/resubscribe` is refused as a retryable JSON-RPC error with Retry-After before any stream
 * opens, and served once the first stream ended; an AG-UI run holds its tenant's one stream, so a
 * second run is a 429 before its stream, while another tenant runs. The default users get (no
 * flag: 256 per caller once a protocol token tells callers apart) is the config's, tested beside
 * svc's other defaults (test/unit/cli/svc-config.test.ts).
 */
import { beforeAll, expect, test } from "bun:test";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { A2A_SECRET, rpc, streamingTask } from "../support/a2a-daemon.ts";
import { AGUI_SECRET, agentSaying, aguiWorkload, runOnce, signedToken } from "../support/agui-daemon.ts";
import type { Daemon } from "../support/daemon.ts";
import { daemonScope } from "../support/daemon-scope.ts";
import { gatedDaemonOptions } from "../support/gated-workload.ts";
import { say, stall } from "../support/scripted.ts";

const scope = daemonScope({ per: "file" });
let daemon: Daemon;
let a2aUrl: string;
let aguiUrl: string;

beforeAll(async () => {
  const workload = aguiWorkload();
  appendFileSync(join(workload.directory, "workload.yaml"), "a2a:\n  expose: true\n  skill_name: Gated change\n");
  daemon = await scope.start(
    gatedDaemonOptions(workload, [stall("a2a", 2000, " done"), stall("agui", 2000, " done"), say("alice")], {
      args: ["--a2a-listen=127.0.0.1:0", "--agui-listen=127.0.0.1:0", "--attach-max-streams-per-caller=1"],
      env: { SVC_A2A_TOKEN: A2A_SECRET, SVC_AGUI_TOKEN: AGUI_SECRET },
    }),
  );
  a2aUrl = /A2A listener at (http:\/\/\S+)/.exec(daemon.log())?.[1] ?? "";
  aguiUrl = `${/AG-UI listener at (http:\/\/\S+)/.exec(daemon.log())?.[1] ?? ""}/agui/gated`;
});

test("A2A: a caller's resubscribe past its stream cap is a retryable JSON-RPC error before any stream; served once its stream ended", async () => {
  const { id, rest } = await streamingTask(a2aUrl, "slow");
  const refused = await rpc(a2aUrl, "tasks/resubscribe", { id });
  expect(refused.status).toBe(200);
  expect(refused.headers.get("content-type")).toContain("application/json");
  expect(refused.headers.get("retry-after")).toBe("5");
  expect(refused.body.error).toMatchObject({ code: -32000, data: { retryable: true } });
  expect(refused.body.error.message).toContain("at most 1 at once");
  await rest();
  const served = await fetch(`${a2aUrl}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${A2A_SECRET}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tasks/resubscribe", params: { id } }),
  });
  expect(served.headers.get("content-type")).toContain("text/event-stream");
  expect(await served.text()).toContain('"final":true');
});

test("AG-UI: a tenant's second run past its stream cap is a 429 before its stream; another tenant runs", async () => {
  const as = (sub: string) => ({ authorization: `Bearer ${signedToken({ sub })}` });
  // A run the client library would not send past a refusal: the raw request and its answer.
  const message = { id: "m-1", role: "user", content: "again" };
  const rawRun = (threadId: string, sub: string) =>
    fetch(aguiUrl, {
      method: "POST",
      headers: { "content-type": "application/json", ...as(sub) },
      body: JSON.stringify({
        threadId,
        runId: `r-${threadId}`,
        messages: [message],
        tools: [],
        context: [],
        state: {},
      }),
    });
  let opened = () => {};
  const open = new Promise<void>((resolve) => {
    opened = resolve;
  });
  const first = agentSaying(aguiUrl, "t-cap-1", "slow", as("bob")).runAgent({}, { onEvent: () => opened() });
  await open;
  const refused = await rawRun("t-cap-2", "bob");
  expect(refused.status).toBe(429);
  expect(refused.headers.get("retry-after")).toBe("5");
  expect(((await refused.json()) as { error: string }).error).toContain("too many open streams for caller bob");
  expect((await runOnce(agentSaying(aguiUrl, "t-cap-3", "hi", as("alice")))).outcome).toBe("success");
  await first;
});
