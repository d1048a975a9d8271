/**
 * svc's A2A listener against the clients a mesh runs: the 1.x SDK (`@a2a-js/sdk`) in its v0.3
 * compatibility mode (send and stream), and the 0.3.14 client's view of the refusals: 401 without
 * the bearer, 403 without the skill's scope, a JWT's tenant as the caller (another tenant's task is
 * not found), the rate limit as a retryable -32000 with Retry-After (reads never limited), and the
 * drain as a retryable -32000.
 */
import { expect, test } from "bun:test";
import {
  ClientFactory as ClientFactory1,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory as Json1,
} from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";
import { ClientFactory, JsonRpcTransportFactory } from "a2a03/client";
import type { Task } from "a2a03";
import { postJson, waitFor } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { AUTH } from "../../support/gated-workload.ts";
import { say, stall } from "../../support/scripted.ts";
import {
  A2A_SECRET,
  bearerFetch,
  plainA2aWorkload,
  rpc,
  signJwt,
  startA2aDaemon,
  textMessage,
  streamResults,
  streamingTask,
} from "../../support/a2a-daemon.ts";

const scope = daemonScope();

function client(url: string, token = A2A_SECRET) {
  const fetchImpl = bearerFetch(token);
  return new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl })] }).createFromUrl(url);
}

function compatClient(url: string) {
  const fetchImpl = bearerFetch(A2A_SECRET);
  return new ClientFactory1({
    transports: [new Json1({ fetchImpl, legacyCompat: { enabled: true } })],
    cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
  }).createFromUrl(url);
}

function compatMessage(text: string) {
  return {
    tenant: "",
    message: {
      messageId: crypto.randomUUID(),
      contextId: "",
      taskId: "",
      role: Role.ROLE_USER,
      parts: [{ content: { $case: "text" as const, value: text }, metadata: undefined, filename: "", mediaType: "" }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}

test("the 1.x client in v0.3 compatibility mode sends and streams", async () => {
  const { a2aUrl } = await startA2aDaemon(scope, [say("first"), say("second")]);
  const a2a = await compatClient(a2aUrl);
  const sent = await a2a.sendMessage(compatMessage("one") as never);
  const task = sent as { id: string; status: { state: number } };
  expect(task.id).toMatch(/^a2a-/);
  expect(task.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
  const cases: string[] = [];
  for await (const frame of a2a.sendMessageStream(compatMessage("two") as never))
    cases.push(frame.payload?.$case ?? "");
  expect(cases).toEqual(["task", "statusUpdate", "artifactUpdate", "statusUpdate"]);
});

test("without the bearer the client's call fails 401; with the secret it passes", async () => {
  const { a2aUrl } = await startA2aDaemon(scope, [say("ok")]);
  const wrong = await client(a2aUrl, "not-the-secret");
  await expect(wrong.getTask({ id: "a2a-x" })).rejects.toThrow(/401/);
  const raw = await fetch(`${a2aUrl}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "a2a-x" } }),
  });
  expect(raw.status).toBe(401);
  expect(raw.headers.get("www-authenticate")).toBe('Bearer realm="a2a"');
});

test("a token lacking the skill's scopes is 403; a JWT carrying them passes, its tenant the caller, and another tenant cannot see the task", async () => {
  const { a2aUrl } = await startA2aDaemon(scope, [say("ok")], { scopes: ["changes:write"] });
  const bare = await rpc(a2aUrl, "message/send", { message: textMessage("hi") });
  expect(bare.status).toBe(403);
  expect(bare.body.error).toContain("changes:write");
  const scoped = signJwt({ tenant: "team-a", scope: "changes:write" });
  const a2a = await client(a2aUrl, scoped);
  const task = (await a2a.sendMessage({ message: textMessage("hi") as never })) as Task;
  expect(task.status.state).toBe("completed");
  const other = await rpc(a2aUrl, "tasks/get", { id: task.id }, signJwt({ tenant: "team-b", scope: "changes:write" }));
  expect(other.body.error.code).toBe(-32001);
  const unscoped = await rpc(a2aUrl, "tasks/get", { id: task.id }, signJwt({ tenant: "team-a" }));
  expect(unscoped.status).toBe(403);
});

test("beyond SVC_A2A_RATE a send is a retryable -32000 with Retry-After; tasks/get and tasks/cancel are never limited", async () => {
  const { a2aUrl } = await startA2aDaemon(scope, [say("one")], { env: { SVC_A2A_RATE: "0.01", SVC_A2A_BURST: "1" } });
  const first = await rpc(a2aUrl, "message/send", { message: textMessage("a") });
  const id = first.body.result.id as string;
  const limited = await rpc(a2aUrl, "message/send", { message: textMessage("b") });
  expect(limited.status).toBe(200);
  expect(limited.body.error).toMatchObject({ code: -32000, data: { retryable: true } });
  expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
  const stream = await rpc(a2aUrl, "message/stream", { message: textMessage("c") });
  expect(stream.body.error.code).toBe(-32000);
  for (let index = 0; index < 5; index++) {
    expect((await rpc(a2aUrl, "tasks/get", { id })).body.result.id).toBe(id);
    expect((await rpc(a2aUrl, "tasks/cancel", { id })).body.result.status.state).toBe("canceled");
  }
  const sdk = await client(a2aUrl);
  await expect(sdk.sendMessage({ message: textMessage("d") as never })).rejects.toThrow(/-32000/);
});

test("while the daemon drains a send is a retryable -32000; the task in flight is read and finishes", async () => {
  const { daemon, a2aUrl } = await startA2aDaemon(scope, [stall("thinking", 4000, "late answer")], {
    workload: plainA2aWorkload(),
  });
  const { id, rest } = await streamingTask(a2aUrl, "slow");
  // The turn is in flight once the task reads as working; a second more and the stalled model has
  // been asked (it answers 4 s later): a turn cut before its model call would not finish in the drain.
  // Pacing: no surface shows a model call starting, so the SIGTERM is spaced a second into the turn.
  await Bun.sleep(1000);
  const stopping = daemon.sigterm();
  // Draining once the main listener refuses writes: an inject with an unknown field is a 400
  // (nothing queued) before, a 503 after.
  const probe = () => postJson(`${daemon.baseUrl}/inject`, { drain_probe: true }, AUTH);
  await waitFor(async () => ((await probe()).status === 503 ? true : undefined), 5000, "the drain");
  const refused = await rpc(a2aUrl, "message/send", { message: textMessage("new") });
  expect(refused.body.error).toMatchObject({ code: -32000, data: { retryable: true } });
  expect(refused.headers.get("retry-after")).toBe("5");
  expect((await rpc(a2aUrl, "tasks/get", { id })).body.result.status.state).toBe("working");
  const frames = streamResults(await rest());
  expect(frames.at(-1)).toMatchObject({ kind: "status-update", final: true, status: { state: "completed" } });
  expect(await stopping).toBe(0);
});
