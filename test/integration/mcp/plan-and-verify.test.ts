/**
 * record_plan and wait_and_verify (D465-D468) on a real `spar agent`, the scripted model and the
 * published MCP filesystem server (its read tools answer what a file holds, so a test changes the
 * answer between polls by rewriting the file). Plan-first: the first cluster call is refused with
 * a plan-first message, record_plan writes plan-1.md (0600) and a `plan-recorded` row, later calls
 * run, and the gate stays open after a restart. wait_and_verify: verified when the condition comes
 * to hold, not verified when the attempts or the time run out, a request above the ceilings
 * clamped and said so, a tool outside poll_allow and a mutating tool refused.
 */
import { afterEach, expect, test } from "bun:test";
import { statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { postJson, startDaemon, tempDir } from "../../support/daemon.ts";
import { collect } from "../../support/sse-client.ts";
import { writeScript } from "../../support/scripted.ts";
import {
  FILESYSTEM,
  call,
  runTurn,
  say,
  settled,
  startWithCatalog,
  stopAll,
  toolResults,
  writeCatalog,
} from "../../fixtures/mcp/harness.ts";

afterEach(stopAll);

const catalog = (root: string) => ({
  version: 1,
  servers: { fs: { transport: "stdio", command: process.execPath, args: [FILESYSTEM, root], env_mode: "clean" } },
});

/** The daemon's config: plan-first on, wait_and_verify polling fs's read_text_file (and, to test its refusal, write_file). */
function configFile(deny: string[] = []): string {
  const path = join(tempDir("spar-triage-config-"), "config.json");
  writeFileSync(
    path,
    JSON.stringify({
      permissions: { mode: "yolo", require_plan_artifact: true, deny },
      tools: {
        wait_and_verify: {
          poll_allow: ["fs_read_text_file", "fs_write_file"],
          max_timeout_seconds: 3,
          max_attempts: 20,
        },
      },
    }),
  );
  return path;
}

interface PlanRow {
  author: string;
  name: string;
  metadata: Record<string, unknown>;
}

type LegacyEvent = { Author: string; CustomMetadata: Record<string, unknown> | null };

const planRows = (events: { frames: Array<{ event: string; data: Record<string, unknown> }> }): PlanRow[] =>
  events.frames
    .filter((frame) => frame.event === "agent")
    .map((frame) => frame.data.event as LegacyEvent)
    .filter((event) => event.Author === "agent/plan")
    .map((event) => {
      const { event: name, ...metadata } = event.CustomMetadata ?? {};
      return { author: event.Author, name: String(name), metadata };
    });

test("plan-first: a cluster call before record_plan is refused; record_plan writes plan-1.md (0600) and a row; later calls run; the gate stays open after a restart", async () => {
  const root = tempDir("spar-plan-ws-");
  writeFileSync(join(root, "pod.json"), '{"status":{"phase":"Running"}}');
  const plansDir = tempDir("spar-plans-");
  const plan = "incident: shop/web-1\ndiagnosis: pending\nplanned_checks:\n- fs__read_text_file: the pod\n";
  const running = await startWithCatalog(
    catalog(root),
    [
      call("fs__read_text_file", { path: join(root, "pod.json") }),
      call("record_plan", { plan }),
      call("fs__read_text_file", { path: join(root, "pod.json") }),
      say("planned and read"),
    ],
    [`--config=${configFile()}`, `--plans-dir=${plansDir}`],
  );
  await settled(running.base);
  const tools = ((await (await fetch(`${running.base}/tools`)).json()) as { tools: Array<{ name: string }> }).tools;
  expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(["record_plan", "wait_and_verify"]));
  expect((await runTurn(running)).event).toBe("turn-complete");

  const [refused, recorded, read] = toolResults(running.events);
  expect(refused?.response).toMatchObject({ refused: true, plan_required: true });
  expect(String(refused?.response.error)).toContain("plan first: fs__read_text_file was not run");
  expect(String(refused?.response.error)).toContain("call record_plan");
  const planPath = join(plansDir, "default", "plan-1.md");
  expect(recorded?.response).toMatchObject({ path: planPath, sequence: 1, session: "default" });
  expect(read?.response.content).toBe('{"status":{"phase":"Running"}}');
  expect(await Bun.file(planPath).text()).toBe(plan);
  expect(statSync(planPath).mode & 0o777).toBe(0o600);
  expect(statSync(join(plansDir, "default")).mode & 0o777).toBe(0o700);
  expect(planRows(running.events)).toEqual([
    { author: "agent/plan", name: "plan-recorded", metadata: { path: planPath, sequence: 1, plan } },
  ]);

  // Sticky: a new daemon on the same store reads the plan back from the log, not from memory.
  expect(await running.daemon.sigterm()).toBe(0);
  const script = writeScript([call("fs__read_text_file", { path: join(root, "pod.json") }), say("still allowed")]);
  const again = await startDaemon({
    sessionDb: running.daemon.sessionDb,
    args: [
      "--model=scripted",
      `--script=${script}`,
      `--mcp-config=${writeCatalog(catalog(root))}`,
      `--config=${configFile()}`,
      `--plans-dir=${tempDir("spar-plans-empty-")}`,
    ],
  });
  const events = collect(`${again.baseUrl}/sessions/default/events?since=1000000`);
  try {
    await events.waitFor((frame) => frame.event === "usage-update");
    const restarted = { daemon: again, events, prompts: events, base: `${again.baseUrl}/sessions/default` };
    expect((await runTurn(restarted)).event).toBe("turn-complete");
    const [after] = toolResults(events);
    expect(after?.response.refused).toBeUndefined();
    expect(after?.response.content).toBe('{"status":{"phase":"Running"}}');
  } finally {
    events.close();
    await again.sigterm();
  }
}, 60_000);

/** The wait_and_verify results of a collector, in order. */
const verifyResults = (events: Parameters<typeof toolResults>[0]) =>
  toolResults(events)
    .filter((result) => result.name === "wait_and_verify")
    .map((result) => result.response);

test("wait_and_verify: refused outside poll_allow and for a mutating tool; not verified when the attempts or the time run out (clamped above the ceiling, and said so); verified once the file changes", async () => {
  const root = tempDir("spar-verify-ws-");
  const status = join(root, "status.txt");
  writeFileSync(status, "Back-off pulling image: ImagePullBackOff\n");
  const denied = join(root, "denied.txt");
  writeFileSync(denied, "x");
  const read = (extra: Record<string, unknown>) => ({
    tool: "fs__read_text_file",
    args_json: JSON.stringify({ path: status }),
    interval_seconds: 1,
    ...extra,
  });
  const running = await startWithCatalog(
    catalog(root),
    [
      call("wait_and_verify", read({ expect_contains: "Running" })),
      call("record_plan", { plan: "verify the image pull clears" }),
      call("wait_and_verify", { ...read({ expect_contains: "x" }), args_json: JSON.stringify({ path: denied }) }),
      call("wait_and_verify", {
        tool: "fs__get_file_info",
        args_json: JSON.stringify({ path: status }),
        expect_contains: "x",
      }),
      call("wait_and_verify", {
        tool: "fs_write_file",
        args_json: JSON.stringify({ path: status, content: "ok" }),
        expect_contains: "ok",
      }),
      call("wait_and_verify", read({ expect_contains: "Running", max_attempts: 2 })),
      call(
        "wait_and_verify",
        read({ expect_not_contains: "ImagePullBackOff", timeout_seconds: 600, max_attempts: 500 }),
      ),
      call("wait_and_verify", read({ expect_jq: ".status[", max_attempts: 2 })),
      say("checked"),
      call("wait_and_verify", read({ expect_jq: '.status.phase == "Running"', max_attempts: 20, timeout_seconds: 3 })),
      say("cleared"),
    ],
    [`--config=${configFile(["fs__read_text_file(*denied.txt*)"])}`, `--plans-dir=${tempDir("spar-plans-")}`],
  );
  await settled(running.base);
  expect((await runTurn(running)).event).toBe("turn-complete");
  const [unplanned, deniedPoll, outside, mutating, exhausted, clamped, badJq] = verifyResults(running.events);
  // Each attempt takes the model's path: the plan gate and the permission gate refuse it as they would the model.
  expect(unplanned).toMatchObject({ refused: true, observations: [{ attempt: 1, matched: false }] });
  expect(String(unplanned?.error)).toContain(
    "wait_and_verify stopped: the poll of fs__read_text_file was refused: plan first: fs__read_text_file was not run",
  );
  expect(deniedPoll).toMatchObject({ refused: true });
  expect(String(deniedPoll?.error)).toContain("wait_and_verify stopped: the poll of fs__read_text_file was refused");
  expect(String(deniedPoll?.error)).toContain("fs__read_text_file(*denied.txt*)");
  expect(outside).toMatchObject({ refused: true });
  expect(String(outside?.error)).toContain("fs__get_file_info: it is not in tools.wait_and_verify.poll_allow");
  expect(String(outside?.error)).toContain("Pollable tools: fs__read_text_file, fs__write_file");
  expect(mutating).toMatchObject({ refused: true });
  expect(String(mutating?.error)).toContain("fs__write_file: the tool catalog marks it mutating");
  expect(await Bun.file(status).text()).toBe("Back-off pulling image: ImagePullBackOff\n");

  expect(exhausted).toMatchObject({
    verified: false,
    outcome: "attempts_exhausted",
    tool: "fs__read_text_file",
    condition: 'expect_contains="Running"',
    attempts: 2,
    interval_seconds: 1,
    last_result: "Back-off pulling image: ImagePullBackOff\n",
  });
  expect(exhausted?.observations).toEqual([
    { attempt: 1, at_seconds: expect.any(Number), matched: false },
    { attempt: 2, at_seconds: expect.any(Number), matched: false },
  ]);
  expect(exhausted?.clamped).toBeUndefined();

  expect(clamped).toMatchObject({ verified: false, outcome: "timeout", timeout_seconds: 3, max_attempts: 20 });
  expect(clamped?.clamped).toEqual([
    { field: "timeout_seconds", requested: 600, used: 3, reason: "the operator's ceiling is 3 s" },
    { field: "max_attempts", requested: 500, used: 20, reason: "the operator's ceiling is 20 attempts" },
  ]);
  expect(Number(clamped?.attempts)).toBeGreaterThanOrEqual(2);
  expect(Number(clamped?.attempts)).toBeLessThanOrEqual(4);
  expect(Number(clamped?.elapsed_seconds)).toBeLessThanOrEqual(3.5);
  expect(String(badJq?.error)).toContain("expect_jq does not compile");

  // The failure clears while the tool polls: the file is rewritten once the first poll has missed.
  const mark = running.events.frames.length;
  const inject = runTurn(running, "verify again");
  await running.events.waitFor((frame) => JSON.stringify(frame.data).includes('"wait_and_verify"'), 20_000, mark);
  await Bun.sleep(1500); // pacing: the pod recovers after the first poll has missed (interval 1 s)
  writeFileSync(status, '{"status":{"phase":"Running"}}');
  expect((await inject).event).toBe("turn-complete");
  const verified = verifyResults(running.events).at(-1);
  expect(verified).toMatchObject({
    verified: true,
    outcome: "verified",
    last_result: '{"status":{"phase":"Running"}}',
  });
  const observations = verified?.observations as Array<{ matched: boolean }>;
  expect(observations.length).toBeGreaterThanOrEqual(2);
  expect(observations[0]?.matched).toBe(false);
  expect(observations.at(-1)?.matched).toBe(true);
}, 60_000);

test("an interrupt ends a wait at once: the turn ends canceled long before the wait's 300 s", async () => {
  const root = tempDir("spar-verify-cancel-");
  const status = join(root, "status.txt");
  writeFileSync(status, "CrashLoopBackOff\n");
  const config = join(tempDir("spar-triage-config-"), "config.json");
  writeFileSync(config, JSON.stringify({ tools: { wait_and_verify: { poll_allow: ["fs_read_text_file"] } } }));
  const running = await startWithCatalog(
    catalog(root),
    [
      call("wait_and_verify", {
        tool: "fs__read_text_file",
        args_json: JSON.stringify({ path: status }),
        expect_not_contains: "CrashLoopBackOff",
        interval_seconds: 1,
        timeout_seconds: 300,
      }),
      say("never reached"),
    ],
    [`--config=${config}`, "--permission-mode=yolo"],
  );
  await settled(running.base);
  const tools = ((await (await fetch(`${running.base}/tools`)).json()) as { tools: Array<{ name: string }> }).tools;
  expect(tools.map((tool) => tool.name)).not.toContain("record_plan");
  const started = performance.now();
  const mark = running.events.frames.length;
  const answer = await fetch(`${running.base}/inject`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ message: "wait" }),
  });
  expect(answer.status).toBe(200);
  await running.events.waitFor((frame) => JSON.stringify(frame.data).includes('"wait_and_verify"'), 20_000, mark);
  // pacing: the call's frame is published before the tool runs, and nothing marks its first poll;
  // past one poll interval the wait is polling, so the interrupt cancels it rather than the call.
  await Bun.sleep(1500);
  const interrupted = await fetch(`${running.base}/interrupt`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ hold: false }),
  });
  expect(interrupted.status).toBe(200);
  const end = await running.events.waitFor(
    (frame) => frame.event === "turn-error" || frame.event === "turn-complete",
    20_000,
    mark,
  );
  expect(end.event).toBe("turn-error");
  expect(performance.now() - started).toBeLessThan(15_000);
  await running.events.waitFor(
    (frame) => frame.event === "agent" && verifyResults(running.events).length > 0,
    5000,
    mark,
  );
  expect(verifyResults(running.events).at(-1)).toMatchObject({ verified: false, outcome: "canceled" });
}, 60_000);

test("the plan is per session: another session's cluster calls stay refused until it records its own", async () => {
  const root = tempDir("spar-plan-sessions-");
  writeFileSync(join(root, "pod.json"), '{"status":{"phase":"Pending"}}');
  const plansDir = tempDir("spar-plans-");
  const read = call("fs__read_text_file", { path: join(root, "pod.json") });
  const running = await startWithCatalog(
    catalog(root),
    [call("record_plan", { plan: "incident a" }), read, say("a done"), read, say("b refused")],
    [`--config=${configFile()}`, `--plans-dir=${plansDir}`, "--multi-session"],
  );
  await settled(running.base);
  const turnIn = async (session: string) => {
    expect((await postJson(`${running.daemon.baseUrl}/sessions`, { sessionID: session })).status).toBe(201);
    const events = collect(`${running.daemon.baseUrl}/sessions/${session}/events`);
    try {
      await events.waitFor((frame) => frame.event === "usage-update");
      const base = `${running.daemon.baseUrl}/sessions/${session}`;
      expect((await runTurn({ ...running, events, base })).event).toBe("turn-complete");
      return toolResults(events);
    } finally {
      events.close();
    }
  };
  const [recorded, allowed] = await turnIn("incident-a");
  expect(recorded?.response).toMatchObject({ path: join(plansDir, "incident-a", "plan-1.md"), sequence: 1 });
  expect(allowed?.response.content).toBe('{"status":{"phase":"Pending"}}');
  const [refused] = await turnIn("incident-b");
  expect(refused?.response).toMatchObject({ refused: true, plan_required: true });
}, 60_000);
