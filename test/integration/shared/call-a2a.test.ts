/**
 * call_a2a in the real daemons, against the A2A SDK's own server (test/fixtures/a2a): `spar agent`
 * with a declared agent (`.agents/a2a/*.yaml`, bearer from the named variable) and with a peer
 * registered on its hub under `protocol=a2a`; `spar svc` in name mode, whose coordinator calls the
 * config root's `a2a/*.yaml` agent. Each asserts the remote agent got the request and the
 * model got the answer.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { daemonScope } from "../../support/daemon-scope.ts";
import { postJson, tempDir, waitFor } from "../../support/daemon.ts";
import { call, say, stall, toolResults, writeScript } from "../../support/scripted.ts";
import { collect } from "../../support/sse-client.ts";
import { type EchoAgent, startEchoAgent } from "../../fixtures/a2a/sdk-echo-agent.ts";
import { APPLY, readLive, storedRows } from "../../support/gated-workload.ts";
import { A2A_SECRET, startA2aDaemon } from "../../support/a2a-daemon.ts";
import { countedCalls } from "../../fixtures/mcp/counting.ts";

const scope = daemonScope();

function remote(token?: string): EchoAgent {
  return scope.defer(startEchoAgent(token === undefined ? {} : { token }), (agent) => agent.stop());
}

/** A project folder whose `.agents/a2a/echo.yaml` declares the agent. */
function projectWith(declaration: string[]): string {
  const cwd = tempDir("spar-a2a-");
  mkdirSync(join(cwd, ".agents", "a2a"), { recursive: true });
  writeFileSync(join(cwd, ".agents", "a2a", "echo.yaml"), `${declaration.join("\n")}\n`);
  return cwd;
}

async function agentDaemon(
  lines: readonly unknown[],
  options: { cwd?: string; args?: string[]; env?: Record<string, string> },
) {
  const daemon = await scope.start({
    args: ["--model=scripted", `--script=${writeScript(lines)}`, "--permission-mode=yolo", ...(options.args ?? [])],
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.env === undefined ? {} : { env: options.env }),
  });
  const events = scope.defer(collect(`${daemon.baseUrl}/sessions/default/events`), (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  return { daemon, events };
}

test("spar agent: a declared agent is offered, called with the bearer its token_env names, and its answer reaches the model", async () => {
  const echo = remote("agent-bearer-1");
  const cwd = projectWith([
    "name: echo",
    `agent_card_url: ${echo.cardUrl}`,
    "skills: [echo]",
    "auth:",
    "  type: bearer",
    "  token_env: ECHO_A2A_TOKEN",
    "timeout_seconds: 10",
  ]);
  const { daemon, events } = await agentDaemon([call("call_a2a", { agent: "echo", message: "hello" }), say("done")], {
    cwd,
    env: { ECHO_A2A_TOKEN: "agent-bearer-1" },
  });
  const tools = (await (await fetch(`${daemon.baseUrl}/sessions/default/tools`)).json()) as {
    tools: Array<{ name: string }>;
  };
  expect(tools.tools.map((tool) => tool.name)).toContain("call_a2a");
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "ask echo" })).status).toBe(200);
  await events.waitFor((frame) => frame.event === "turn-complete");
  expect(toolResults(events)[0]?.response).toMatchObject({ agent: "echo", state: "completed", text: "echo: hello" });
  expect(echo.authorizations).toEqual(["Bearer agent-bearer-1"]);
});

test("spar agent: a peer registered on the hub with protocol=a2a is callable by name (loopback opened by --outbound-allow)", async () => {
  const echo = remote();
  const { daemon, events } = await agentDaemon(
    [call("call_a2a", { agent: "echo-peer", message: "from the hub" }), say("done")],
    { cwd: tempDir("spar-a2a-"), args: ["--attach-peer-hub", "--outbound-allow=127.0.0.1"] },
  );
  const registered = await postJson(`${daemon.baseUrl}/peers`, {
    name: "echo-peer",
    endpoint: echo.url,
    labels: { protocol: "a2a" },
  });
  expect(registered.status).toBe(201);
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "ask the peer" })).status).toBe(200);
  await events.waitFor((frame) => frame.event === "turn-complete");
  expect(toolResults(events)[0]?.response).toMatchObject({
    agent: "echo-peer",
    state: "completed",
    text: "echo: from the hub",
  });
});

/** A svc config root: workload `caller` (name mode) and the a2a agent `echo` at `endpoint`, its bearer in ECHO_SVC_TOKEN. */
function callerRoot(endpoint: string): string {
  const root = tempDir("spar-svc-a2a-");
  mkdirSync(join(root, "workloads"));
  mkdirSync(join(root, "a2a"));
  mkdirSync(join(root, "specialists"));
  writeFileSync(
    join(root, "workloads", "caller.yaml"),
    "name: caller\ndescription: asks a remote agent\nspecialists: [helper]\n",
  );
  writeFileSync(
    join(root, "specialists", "helper.tmpl"),
    "---\ndescription: helps\nmode: Task\ncapability: read_only\n---\nHelp, then call finish_task.\n",
  );
  writeFileSync(
    join(root, "a2a", "echo.yaml"),
    ["name: echo", `endpoint: ${endpoint}`, "auth:", "  type: bearer", "  token_env: ECHO_SVC_TOKEN", ""].join("\n"),
  );
  return root;
}

async function callerSvc(endpoint: string, token: string, lines: readonly unknown[]) {
  const sessionDb = join(tempDir(), "svc.db");
  const daemon = await scope.start({
    role: "svc",
    sessionDb,
    args: ["--workload=caller", "--model=scripted"],
    env: { SVC_CONFIG_DIR: callerRoot(endpoint), ECHO_SVC_TOKEN: token, SVC_SCRIPT: writeScript(lines) },
  });
  return { daemon, sessionDb };
}

test("spar svc: the coordinator of a name-mode workload calls the config root's a2a agent", async () => {
  const echo = remote("svc-bearer-2");
  const { daemon, sessionDb } = await callerSvc(echo.endpoint, "svc-bearer-2", [
    call("call_a2a", { agent: "echo", message: "from svc" }),
    say("remote answered"),
  ]);
  const answer = await postJson(`${daemon.baseUrl}/inject`, { uid: "a2a-1", message: "ask echo" });
  // 202 once the turn has finished (main-listener.ts).
  expect(answer.status).toBe(202);
  expect(echo.authorizations).toEqual(["Bearer svc-bearer-2"]);
  await daemon.sigterm();
  const rows = JSON.stringify(await storedRows(sessionDb, "svc", "incident-a2a-1"));
  expect(rows).toContain("echo: from svc");
  expect(rows).not.toContain("svc-bearer-2");
});

test("spar svc: aborting the incident stops its call_a2a waiting on a slow remote agent, at once", async () => {
  // The remote is a spar svc whose model takes two minutes: without the turn's signal the call would wait it out.
  const slow = await startA2aDaemon(scope, [stall("thinking", 120_000)]);
  const { daemon, sessionDb } = await callerSvc(`${slow.a2aUrl}/a2a`, A2A_SECRET, [
    call("call_a2a", { agent: "echo", message: "take your time" }),
    say("never reached"),
  ]);
  const injected = postJson(`${daemon.baseUrl}/inject`, { uid: "slow-1", message: "ask the slow one" });
  // The remote's task exists (read beside its running daemon, read-only): the call is waiting on it.
  await waitFor(
    async () => {
      const ids = await readLive(slow.daemon.sessionDb, (store) => store.sessionIds());
      return ids.some((id) => id.startsWith("a2a-")) ? true : undefined;
    },
    15_000,
    "the remote task",
  );
  const aborted = await postJson(`${daemon.baseUrl}/abort`, { session_id: "incident-slow-1", reason: "too slow" });
  expect(aborted.status).toBe(202);
  const started = Date.now();
  await injected.catch(() => undefined);
  expect(Date.now() - started).toBeLessThan(10_000);
  await daemon.sigterm();
  const results = (await storedRows(sessionDb, "svc", "incident-slow-1"))
    .map((row) => row.event)
    .filter((event) => event.kind === "tool-result");
  expect(results).toMatchObject([{ name: "call_a2a", isError: true }]);
  expect(JSON.stringify(results[0])).toContain("stopped: the turn was cancelled");
}, 60_000);

describe("two spar daemons over A2A", () => {
  /** A spar agent whose `.agents/a2a/svc.yaml` declares the svc daemon's A2A card, with its bearer. */
  async function agentCalling(a2aUrl: string, lines: readonly unknown[]) {
    const cwd = projectWith([
      "name: svc",
      `agent_card_url: ${a2aUrl}/.well-known/agent-card.json`,
      "skills: [gated]",
      "auth:",
      "  type: bearer",
      "  token_env: SVC_PEER_TOKEN",
      "timeout_seconds: 20",
    ]);
    return agentDaemon(lines, { cwd, env: { SVC_PEER_TOKEN: A2A_SECRET } });
  }

  test("spar agent's call_a2a reaches spar svc's A2A listener: the task completes and its answer reaches the model", async () => {
    const svc = await startA2aDaemon(scope, [say("all replicas healthy")]);
    const { daemon, events } = await agentCalling(svc.a2aUrl, [
      call("call_a2a", { agent: "svc", message: "status of web?" }),
      say("done"),
    ]);
    expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "ask svc" })).status).toBe(200);
    await events.waitFor((frame) => frame.event === "turn-complete");
    const answer = toolResults(events)[0]?.response as Record<string, unknown>;
    expect(answer).toMatchObject({ agent: "svc", state: "completed", text: "all replicas healthy" });
    expect(String(answer.task_id)).toMatch(/^a2a-/);
  });

  test("a gated svc workload answers input-required with the task id; the agent's model gets the question, nothing ran", async () => {
    const svc = await startA2aDaemon(scope, [
      call("worker", { request: "scale web to 10" }),
      call(APPLY, { replicas: 10 }),
    ]);
    const { daemon, events } = await agentCalling(svc.a2aUrl, [
      call("call_a2a", { agent: "svc", message: "scale web to 10" }),
      say("waiting for approval"),
    ]);
    expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "ask svc" })).status).toBe(200);
    await events.waitFor((frame) => frame.event === "turn-complete");
    const answer = toolResults(events)[0]?.response as Record<string, unknown>;
    expect(answer).toMatchObject({ agent: "svc", state: "input-required" });
    expect(String(answer.task_id)).toMatch(/^a2a-/);
    expect(JSON.stringify(answer)).toContain("Approve mutating call apply_change(replicas=10)?");
    expect(countedCalls(svc.workload.countDir, "apply_change")).toEqual([]);
  });
});
