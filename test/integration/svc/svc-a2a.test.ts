/**
 * svc's A2A listener driven by the protocol's own v0.3 client (`@a2a-js/sdk` 0.3.14, installed as
 * `a2a03`), unmodified: cards valid against the v0.3.0 schema, `sendMessage`, `sendMessageStream`
 * (every frame type, the stream closed after `final`), `getTask`, `cancelTask`, a gated workload
 * that comes back `input-required` and completes once an operator approves through /resume.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import { ClientFactory, JsonRpcTransportFactory, TaskNotFoundError } from "a2a03/client";
import type { Task } from "a2a03";
import { countedCalls } from "../../fixtures/mcp/counting.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { APPLY, resume } from "../../support/gated-workload.ts";
import { call, say, stall } from "../../support/scripted.ts";
import {
  A2A_SECRET,
  bearerFetch,
  plainA2aWorkload,
  rpc,
  startA2aDaemon,
  streamResults,
  streamingTask,
  textMessage,
} from "../../support/a2a-daemon.ts";

const scope = daemonScope();

const PROPOSE = [call("worker", { request: "scale web to 10" }), call(APPLY, { replicas: 10 })];
const FINISH = [call("finish_task", { result: "done" }), say("handled")];

function client(url: string, token = A2A_SECRET) {
  const fetchImpl = bearerFetch(token);
  return new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl })] }).createFromUrl(url);
}

function cardValidator() {
  const schema = JSON.parse(readFileSync(new URL("../../fixtures/a2a-v0.3.0.schema.json", import.meta.url), "utf8"));
  const ajv = new Ajv({ strict: false });
  ajv.addSchema(schema, "a2a");
  const validate = ajv.getSchema("a2a#/definitions/AgentCard");
  if (!validate) throw new Error("no AgentCard definition");
  return validate;
}

test("the aggregated and per-workload cards are public, valid v0.3.0 cards naming the workload as a skill, with an A2A-Version header", async () => {
  const { a2aUrl } = await startA2aDaemon(scope, []);
  const validate = cardValidator();
  for (const path of ["/.well-known/agent-card.json", "/.well-known/agent-card/gated.json"]) {
    const response = await fetch(`${a2aUrl}${path}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("a2a-version")).toBe("0.3.0");
    const card = (await response.json()) as Record<string, any>;
    expect(validate(card)).toBe(true);
    expect(card).toMatchObject({
      preferredTransport: "JSONRPC",
      url: `${a2aUrl}/a2a`,
      capabilities: { streaming: true },
    });
    expect(card.skills.map((skill: { id: string; name: string }) => [skill.id, skill.name])).toEqual([
      ["gated", "Gated change"],
    ]);
  }
  const missing = cardValidator();
  expect(missing({ name: "x" })).toBe(false);
  // Only the exposed cards are public: another path answers 404 to an authenticated caller only.
  expect((await fetch(`${a2aUrl}/.well-known/agent-card/other.json`)).status).toBe(401);
  const other = await fetch(`${a2aUrl}/.well-known/agent-card/other.json`, {
    headers: { authorization: `Bearer ${A2A_SECRET}` },
  });
  expect(other.status).toBe(404);
});

test("sendMessage runs a turn and answers a completed task with a server-minted, time-ordered a2a- id, a ctx- context and the result artifact; getTask reads it back", async () => {
  const { a2aUrl } = await startA2aDaemon(scope, [say("all quiet")]);
  const a2a = await client(a2aUrl);
  const sent = Date.now();
  const task = (await a2a.sendMessage({ message: textMessage("status?") as never })) as Task;
  expect(task.kind).toBe("task");
  expect(task.id).toMatch(/^a2a-[0-9a-f]{32}$/);
  // A UUIDv7 without its dashes: the minting millisecond first (the store's indexes grow at their end), version 7.
  const minted = Number.parseInt(task.id.slice(4, 16), 16);
  expect(minted).toBeGreaterThanOrEqual(sent);
  expect(minted).toBeLessThanOrEqual(Date.now());
  expect(task.id[16]).toBe("7");
  expect(task.contextId).toMatch(/^ctx-[0-9a-f]{32}$/);
  expect(task.status.state).toBe("completed");
  expect(task.artifacts?.[0]).toMatchObject({ name: "result", parts: [{ kind: "text", text: "all quiet" }] });
  const again = await a2a.getTask({ id: task.id });
  expect(again).toMatchObject({ id: task.id, contextId: task.contextId, status: { state: "completed" } });
});

test("a caller's contextId is kept, durably", async () => {
  const { a2aUrl } = await startA2aDaemon(scope, [say("ok")]);
  const a2a = await client(a2aUrl);
  const task = (await a2a.sendMessage({
    message: textMessage("hi", { contextId: "conversation-7" }) as never,
  })) as Task;
  expect(task.contextId).toBe("conversation-7");
  expect((await a2a.getTask({ id: task.id })).contextId).toBe("conversation-7");
});

test("sendMessageStream yields the task snapshot, a status update per model response, the artifact, then final, and the stream closes", async () => {
  const { a2aUrl } = await startA2aDaemon(scope, [say("streamed answer")]);
  const a2a = await client(a2aUrl);
  const frames: Array<Record<string, any>> = [];
  for await (const frame of a2a.sendMessageStream({ message: textMessage("go") as never })) frames.push(frame as never);
  expect(frames.map((frame) => frame.kind)).toEqual(["task", "status-update", "artifact-update", "status-update"]);
  expect(frames[1]).toMatchObject({ status: { state: "working", message: { parts: [{ text: "streamed answer" }] } } });
  expect(frames[1]?.final).toBe(false);
  expect(frames[2]).toMatchObject({ artifact: { name: "result", parts: [{ text: "streamed answer" }] } });
  expect(frames[3]).toMatchObject({ final: true, status: { state: "completed" } });
  const ids = new Set(frames.map((frame) => (frame.kind === "task" ? frame.id : frame.taskId)));
  expect(ids.size).toBe(1);
});

test("a gated call comes back input-required naming its question; an operator's approval through /resume completes the same task and the tool ran once", async () => {
  const { daemon, a2aUrl, workload } = await startA2aDaemon(scope, [...PROPOSE, ...FINISH]);
  const a2a = await client(a2aUrl);
  const task = (await a2a.sendMessage({ message: textMessage("scale web to 10") as never })) as Task;
  expect(task.status.state).toBe("input-required");
  const note = (task.status.message?.parts[0] as { text: string }).text;
  expect(note).toContain("Approve mutating call apply_change(replicas=10)?");
  const interruptId = /^(\S+): Approve/m.exec(note)?.[1] ?? "";
  expect((await a2a.getTask({ id: task.id })).status.state).toBe("input-required");
  expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);

  const answered = await resume(daemon, task.id, interruptId, { verdict: "approve" });
  expect(answered.status).toBe(202);
  const done = await a2a.getTask({ id: task.id });
  expect(done.status.state).toBe("completed");
  expect(done.artifacts?.[0]?.parts[0]).toMatchObject({ kind: "text", text: "handled" });
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
});

test("cancelTask aborts the task (canceled) and is idempotent; a send on it answers its durable state", async () => {
  const { a2aUrl } = await startA2aDaemon(scope, PROPOSE);
  const a2a = await client(a2aUrl);
  const task = (await a2a.sendMessage({ message: textMessage("scale") as never })) as Task;
  expect(task.status.state).toBe("input-required");
  expect((await a2a.cancelTask({ id: task.id })).status.state).toBe("canceled");
  expect((await a2a.cancelTask({ id: task.id })).status.state).toBe("canceled");
  const again = (await a2a.sendMessage({ message: textMessage("more", { taskId: task.id }) as never })) as Task;
  expect(again.status.state).toBe("canceled");
});

test("getTask of an id without the a2a- prefix, or an unknown one, is TaskNotFound (-32001)", async () => {
  const { a2aUrl } = await startA2aDaemon(scope, []);
  const a2a = await client(a2aUrl);
  await expect(a2a.getTask({ id: "incident-k1" })).rejects.toBeInstanceOf(TaskNotFoundError);
  await expect(a2a.getTask({ id: `a2a-${"0".repeat(32)}` })).rejects.toBeInstanceOf(TaskNotFoundError);
  const raw = await rpc(a2aUrl, "tasks/cancel", { id: "incident-k1" });
  expect(raw.body.error.code).toBe(-32001);
});

test("a message without text parts is -32602; an unknown method -32601; a malformed envelope -32600", async () => {
  const { a2aUrl } = await startA2aDaemon(scope, []);
  const data = await rpc(a2aUrl, "message/send", {
    message: { kind: "message", messageId: "m1", role: "user", parts: [{ kind: "data", data: { a: 1 } }] },
  });
  expect(data.status).toBe(200);
  expect(data.body.error).toMatchObject({ code: -32602 });
  expect(data.body.error.message).toContain("no text parts");
  expect((await rpc(a2aUrl, "tasks/frobnicate", { id: "a2a-x" })).body.error.code).toBe(-32601);
  const bad = await fetch(`${a2aUrl}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${A2A_SECRET}` },
    body: JSON.stringify({ jsonrpc: "1.0", id: 4, method: "tasks/get" }),
  });
  expect(((await bad.json()) as Record<string, any>).error.code).toBe(-32600);
});

test("tasks/cancel while the turn is in flight is authoritative: the send answers canceled, and so does tasks/get", async () => {
  const { a2aUrl } = await startA2aDaemon(scope, [stall("thinking", 5000, "too late")], {
    workload: plainA2aWorkload(),
  });
  const { id, rest } = await streamingTask(a2aUrl, "slow");
  expect((await rpc(a2aUrl, "tasks/cancel", { id })).body.result.status.state).toBe("canceled");
  const text = await rest();
  expect(streamResults(text).at(-1)).toMatchObject({
    kind: "status-update",
    final: true,
    status: { state: "canceled" },
  });
  expect(text).not.toContain("too late");
  expect((await rpc(a2aUrl, "tasks/get", { id })).body.result.status.state).toBe("canceled");
});

test("resubscribeTask follows a working task to its end: snapshot, its model response, the artifact, final; a finished task answers at once", async () => {
  const { a2aUrl } = await startA2aDaemon(scope, [stall("thinking", 1500, " it through")], {
    workload: plainA2aWorkload(),
  });
  const { id, rest } = await streamingTask(a2aUrl, "slow");
  const a2a = await client(a2aUrl);
  const frames: Array<Record<string, any>> = [];
  for await (const frame of a2a.resubscribeTask({ id })) frames.push(frame as never);
  expect(frames.map((frame) => frame.kind)).toEqual(["task", "status-update", "artifact-update", "status-update"]);
  expect(frames[0]).toMatchObject({ id, status: { state: "working" } });
  expect(frames[1]).toMatchObject({ final: false, status: { message: { parts: [{ text: "thinking it through" }] } } });
  expect(frames[2]).toMatchObject({ artifact: { parts: [{ text: "thinking it through" }] } });
  expect(frames[3]).toMatchObject({ final: true, status: { state: "completed" } });
  await rest();
  const again: Array<Record<string, any>> = [];
  for await (const frame of a2a.resubscribeTask({ id })) again.push(frame as never);
  expect(again.map((frame) => frame.kind)).toEqual(["task", "artifact-update", "status-update"]);
  expect(again[0]).toMatchObject({ status: { state: "completed" } });
  // Refused before a stream opens, like message/stream: a plain JSON-RPC error.
  const unknown = await rpc(a2aUrl, "tasks/resubscribe", { id: "a2a-00000000000000000000000000000000" });
  expect(unknown.body.error.code).toBe(-32001);
});
