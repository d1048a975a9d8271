/**
 * The permission gate in a real daemon, driven by scripted tool calls: prompts on /perms/stream,
 * approval and denial (with a reason the model reads), 404 on a second answer, 400 rules that keep
 * a prompt pending, 410 for expired and turn-ended prompts (also after kill -9), the refusal
 * storm, mode changes with their audit row, and deny patterns.
 */
import { expect, test } from "bun:test";
import { daemonScope } from "../../support/daemon-scope.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { postJson, tempDir, waitFor } from "../../support/daemon.ts";
import { collect } from "../../support/sse-client.ts";
import { call, toolResults } from "../../support/scripted.ts";

const scope = daemonScope();

const say = (text: string) => ({
  request: {},
  responses: [{ content: { role: "model", parts: [{ text }] }, turnComplete: true }],
});

async function start(lines: unknown[], args: string[] = [], sessionDb?: string) {
  const script = join(tempDir(), "script.jsonl");
  writeFileSync(script, `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`);
  const daemon = await scope.start({
    args: ["--model=scripted", `--script=${script}`, ...args],
    ...(sessionDb ? { sessionDb } : {}),
  });
  const events = collect(`${daemon.baseUrl}/sessions/default/events`);
  const prompts = collect(`${daemon.baseUrl}/sessions/default/perms/stream`);
  scope.defer(events, (stream) => stream.close());
  scope.defer(prompts, (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  return { daemon, events, prompts, base: `${daemon.baseUrl}/sessions/default`, script };
}

const respond = (base: string, body: unknown) => postJson(`${base}/perms/respond`, body);

test("ask: a prompt is published, approval runs the call, a second answer is 404, the turn completes", async () => {
  const { events, prompts, base } = await start([
    call("write_file", { path: "/tmp/x", content: "hi" }),
    say("written"),
  ]);
  expect((await postJson(`${base}/inject`, { message: "write it" })).status).toBe(200);
  const prompt = await prompts.waitFor((frame) => frame.event === "prompt");
  expect(prompt.data).toMatchObject({ kind: "file_write", tool: "write_file", detail: "/tmp/x" });
  expect(String(prompt.data.id)).toMatch(/^[0-9a-f]{24}$/);
  await events.waitFor((frame) => frame.event === "status-update" && frame.data.turn_state === "awaiting_permission");
  const answer = await respond(base, { id: prompt.data.id, decision: "allow-once" });
  expect(answer.status).toBe(200);
  expect(await answer.json()).toEqual({ acknowledged: true });
  expect((await respond(base, { id: prompt.data.id, decision: "allow-once" })).status).toBe(404);
  await events.waitFor((frame) => frame.event === "turn-complete");
  // Approved, the call reached the tool, which refuses a path outside its workspace (the daemon's cwd).
  expect(toolResults(events)[0]?.response.error).toContain("outside the workspace");
  const perms = (await (await fetch(`${base}/perms`)).json()) as {
    mode: string;
    approvals: Array<Record<string, unknown>>;
  };
  expect(perms.mode).toBe("ask");
  expect(perms.approvals).toEqual([expect.objectContaining({ tool: "write_file", decision: "allow-once" })]);
  expect(perms.approvals[0]?.by).toBeUndefined();
});

test("deny with a reason: 400s keep the prompt pending; the model reads the reason in the refusal", async () => {
  const { events, prompts, base } = await start([call("bash", { command: "rm -rf /var/lib/app" }), say("understood")]);
  await postJson(`${base}/inject`, { message: "clean up" });
  const prompt = await prompts.waitFor((frame) => frame.event === "prompt");
  expect(prompt.data).toMatchObject({ kind: "bash", tool: "bash", verb: "rm" });
  expect((await respond(base, { id: prompt.data.id, decision: "allow-once", reason: "fine" })).status).toBe(400);
  expect((await respond(base, { id: prompt.data.id, decision: "deny", reason: "x".repeat(501) })).status).toBe(400);
  expect((await respond(base, { id: prompt.data.id, decision: "deny", approver: "someone" })).status).toBe(400);
  expect((await respond(base, { id: prompt.data.id, decision: "maybe" })).status).toBe(400);
  const denied = await respond(base, { id: prompt.data.id, decision: "deny", reason: "too\n  dangerous   on prod" });
  expect(denied.status).toBe(200);
  await events.waitFor((frame) => frame.event === "turn-complete");
  const refusal = String(toolResults(events)[0]?.response.error);
  expect(refusal).toContain("too dangerous on prod");
  expect(toolResults(events)[0]?.response.refused).toBe(true);
});

test("an unanswered prompt expires: the call is refused and a late answer is 410 expired", async () => {
  const { events, prompts, base } = await start(
    [call("write_file", { path: "/a" }), say("gave up")],
    ["--approval-timeout=300ms"],
  );
  await postJson(`${base}/inject`, { message: "go" });
  const prompt = await prompts.waitFor((frame) => frame.event === "prompt");
  await events.waitFor((frame) => frame.event === "turn-complete", 5000);
  const late = await respond(base, { id: prompt.data.id, decision: "allow-once" });
  expect(late.status).toBe(410);
  expect(await late.json()).toMatchObject({ reason: "expired" });
  expect(String(toolResults(events)[0]?.response.error)).toContain("timed out");
});

test("a prompt whose turn ended (interrupt) answers 410 turn-ended", async () => {
  const { events, prompts, base } = await start([call("write_file", { path: "/b" })]);
  await postJson(`${base}/inject`, { message: "go" });
  const prompt = await prompts.waitFor((frame) => frame.event === "prompt");
  expect((await postJson(`${base}/interrupt`, { hold: false })).status).toBe(200);
  await events.waitFor((frame) => frame.event === "turn-error");
  const late = await respond(base, { id: prompt.data.id, decision: "allow-once" });
  expect(late.status).toBe(410);
  expect(await late.json()).toMatchObject({ reason: "turn-ended" });
});

test("kill -9 while a prompt is pending: the restarted daemon answers 410 turn-ended for it", async () => {
  const first = await start([call("write_file", { path: "/c" })]);
  await postJson(`${first.base}/inject`, { message: "go" });
  const prompt = await first.prompts.waitFor((frame) => frame.event === "prompt");
  await first.daemon.kill9();
  const second = await start([say("fresh")], [], first.daemon.sessionDb);
  const late = await respond(second.base, { id: prompt.data.id, decision: "allow-once" });
  expect(late.status).toBe(410);
  expect(await late.json()).toMatchObject({ reason: "turn-ended" });
  expect((await respond(second.base, { id: "0123456789abcdef01234567", decision: "deny" })).status).toBe(404);
});

test("prompts closed before a restart answer the same 410 after it: expired stays expired, a SIGTERM-ended one turn-ended", async () => {
  const first = await start(
    [call("write_file", { path: "/e" }), say("after expiry"), call("write_file", { path: "/f" })],
    ["--approval-timeout=300ms"],
  );
  await postJson(`${first.base}/inject`, { message: "go" });
  const expiring = await first.prompts.waitFor((frame) => frame.event === "prompt");
  await first.events.waitFor((frame) => frame.event === "turn-complete", 10_000);
  const expiredBefore = await respond(first.base, { id: expiring.data.id, decision: "allow-once" });
  expect([expiredBefore.status, ((await expiredBefore.json()) as { reason: string }).reason]).toEqual([410, "expired"]);
  const mark = first.prompts.frames.length;
  await postJson(`${first.base}/inject`, { message: "again" });
  const ending = await first.prompts.waitFor((frame) => frame.event === "prompt", 10_000, mark);
  expect(await first.daemon.sigterm()).toBe(0);

  const second = await start([say("fresh")], [], first.daemon.sessionDb);
  const expiredAfter = await respond(second.base, { id: expiring.data.id, decision: "allow-once" });
  expect([expiredAfter.status, ((await expiredAfter.json()) as { reason: string }).reason]).toEqual([410, "expired"]);
  const endedAfter = await respond(second.base, { id: ending.data.id, decision: "allow-once" });
  expect([endedAfter.status, ((await endedAfter.json()) as { reason: string }).reason]).toEqual([410, "turn-ended"]);
});

test("refusal storm: three re-issues of a refused call cut the turn canceled with a gate/refusal-storm row", async () => {
  const rm = call("bash", { command: "rm -rf /" });
  const { events, prompts, base } = await start([rm, rm, rm, rm, say("never reached")]);
  await postJson(`${base}/inject`, { message: "go" });
  const prompt = await prompts.waitFor((frame) => frame.event === "prompt");
  expect((await respond(base, { id: prompt.data.id, decision: "deny" })).status).toBe(200);
  const error = await events.waitFor((frame) => frame.event === "turn-error");
  expect(error.data.kind).toBe("canceled");
  const storm = events.frames.find(
    (frame) => frame.event === "agent" && (frame.data.event as { Author: string }).Author === "gate/refusal-storm",
  );
  expect((storm?.data.event as { CustomMetadata: Record<string, unknown> }).CustomMetadata).toMatchObject({
    event: "refusal-storm",
    suppressed_calls: 3,
  });
  expect(prompts.frames.filter((frame) => frame.event === "prompt")).toHaveLength(1);
  expect(events.frames.some((frame) => frame.event === "guardrail-trip")).toBe(false);
});

test("modes: yolo runs without asking (audit row), the current mode writes nothing, allow is config-only; deny patterns refuse", async () => {
  const { events, prompts, base } = await start([
    call("write_file", { path: "/d" }),
    say("ok"),
    call("bash", { command: "rm -rf /tmp/x" }),
    say("refused"),
  ]);
  const change = await postJson(`${base}/perms/mode`, { mode: "yolo" });
  expect(await change.json()).toEqual({ previous: "ask", mode: "yolo" });
  expect(await (await postJson(`${base}/perms/mode`, { mode: "yolo" })).json()).toEqual({
    previous: "yolo",
    mode: "yolo",
  });
  expect((await postJson(`${base}/perms/mode`, { mode: "allow" })).status).toBe(400);
  const audits = () =>
    events.frames.filter(
      (frame) => frame.event === "agent" && (frame.data.event as { Author: string }).Author === "attach/perm-mode",
    );
  await waitFor(() => (audits().length === 1 ? true : undefined), 5000, "perm-mode row");
  expect((audits()[0]?.data.event as { CustomMetadata: Record<string, unknown> }).CustomMetadata).toMatchObject({
    from: "ask",
    to: "yolo",
  });
  await postJson(`${base}/inject`, { message: "write" });
  await events.waitFor((frame) => frame.event === "turn-complete");
  expect(prompts.frames).toHaveLength(0);
  expect((await postJson(`${base}/perms/deny`, { patterns: [] })).status).toBe(400);
  expect((await postJson(`${base}/perms/deny`, { patterns: ["bash(rm *)"] })).status).toBe(204);
  const start2 = events.frames.length;
  await postJson(`${base}/inject`, { message: "remove" });
  await events.waitFor((frame) => frame.event === "turn-complete", 5000, start2);
  expect(String(toolResults(events)[1]?.response.error)).toContain("bash(rm *)");
  expect(((await (await fetch(`${base}/perms`)).json()) as { deny: string[] }).deny).toEqual(["bash(rm *)"]);
});
