/**
 * The auto-continue tests' harness, for each session store driver (sqlite in auto-continue.test.ts,
 * PostgreSQL in agent-postgres.test.ts): scripted daemons that re-drive quickly, the rows of their
 * default session, a turn cut by kill -9 at a tool call's permission prompt, and the scenario that
 * a restart repairs that call and re-drives the turn exactly once. `store`: where the daemons keep
 * their sessions (absent sessionDb: a fresh sqlite file per daemon started without one).
 */
import { expect } from "bun:test";
import type { AgentStore } from "./agent-durability.ts";
import type { DaemonScope } from "./daemon-scope.ts";
import { type Daemon, postJson, waitFor } from "./daemon.ts";
import { call, writeScript } from "./scripted.ts";
import { type Collector, type Frame, collect } from "./sse-client.ts";

export const say = (text: string, extra: Record<string, unknown> = {}) => ({
  request: {},
  responses: [{ content: { role: "model", parts: [{ text }] }, turnComplete: true, ...extra }],
});
export const slow = (text: string, delayMs: number) => ({
  request: {},
  responses: [{ content: { role: "model", parts: [{ text }] }, turnComplete: true, delayMs }],
});

export type Row = {
  Author: string;
  InvocationID: string;
  CustomMetadata: Record<string, unknown> | null;
  Content: {
    parts: Array<{ text?: string; functionResponse?: { name: string; response: Record<string, unknown> } }>;
  } | null;
};
export const rows = (events: Collector): Row[] =>
  events.frames.filter((frame) => frame.event === "agent").map((frame) => frame.data.event as Row);
export const authors = (events: Collector) => rows(events).map((row) => row.Author);
export const continues = (events: Collector) => rows(events).filter((row) => row.Author === "agent/auto-continue");
export const turnEnd = (frame: Frame) => frame.event === "turn-complete" || frame.event === "turn-error";
export const metric = async (daemon: Daemon, name: string) =>
  Number(
    new RegExp(`^${name} (\\d+)`, "m").exec(await (await fetch(`${daemon.baseUrl}/metrics`)).text())?.[1] ?? Number.NaN,
  );

/** Scripted daemons on `store`: `start` one, or `cutAtToolCall` (start one and kill it at a permission prompt). */
export function autoContinueHarness(scope: DaemonScope, store: AgentStore = {}) {
  async function start(script: string, args: string[] = [], sessionDb?: string) {
    const daemon = await scope.start({
      ...store,
      args: [...(store.args ?? []), "--model=scripted", `--script=${script}`, "--auto-continue-backoff=50ms", ...args],
      ...(sessionDb ? { sessionDb } : {}),
    });
    const events = collect(`${daemon.baseUrl}/sessions/default/events`);
    scope.defer(events, (stream) => stream.close());
    await events.waitFor((frame) => frame.event === "capabilities");
    return { daemon, events, base: `${daemon.baseUrl}/sessions/default` };
  }

  /** Start a turn whose tool call waits on a permission prompt, then kill the daemon there. */
  async function cutAtToolCall(script: string, args: string[] = []) {
    const first = await start(script, ["--permission-mode=ask", ...args]);
    const prompts = collect(`${first.base}/perms/stream`);
    try {
      await postJson(`${first.base}/inject`, { message: "look it up" });
      await prompts.waitFor((frame) => frame.event === "prompt");
    } finally {
      prompts.close();
    }
    // The events stream has no order with the prompts stream: wait on it for the frame the prompt
    // follows, so the rows before it (the user's among them) have arrived.
    await first.events.waitFor(
      (frame) => frame.event === "status-update" && frame.data.turn_state === "awaiting_permission",
    );
    const interruption = rows(first.events).find((row) => row.Author === "user")?.InvocationID ?? "";
    await first.daemon.kill9();
    return { sessionDb: first.daemon.sessionDb, interruption };
  }

  return { start, cutAtToolCall };
}

/** kill -9 between a tool call and its result: the restart repairs the call and re-drives the turn once. */
export async function killAtToolCallRedrivesOnce(harness: ReturnType<typeof autoContinueHarness>): Promise<void> {
  const { start, cutAtToolCall } = harness;
  // Each daemon replays its script from the top: the restarted one gets its own.
  const { sessionDb } = await cutAtToolCall(
    writeScript([call("write_file", { path: "/nonexistent/spar-test", content: "x" })]),
  );
  const second = await start(writeScript([say("resumed")]), ["--permission-mode=ask"], sessionDb);
  await second.events.waitFor(
    (frame) => frame.event === "agent" && (frame.data.event as Row).Author === "agent/auto-continue",
  );
  await waitFor(
    () => (authors(second.events).filter((author) => author === "spar").length >= 2 ? true : undefined),
    10_000,
    "the re-driven answer",
  );
  const log = authors(second.events);
  const repair = log.indexOf("agent/repair");
  expect(repair).toBeGreaterThan(log.indexOf("gate/prompt"));
  expect(log[repair + 1]).toBe("agent/auto-continue");
  const repaired = rows(second.events)[repair]?.Content?.parts[0]?.functionResponse;
  expect(repaired).toMatchObject({ name: "write_file", response: { repaired: true } });
  const note = continues(second.events)[0];
  expect(note?.Content?.parts[0]?.text).toContain("[auto-continue] the daemon restarted");
  expect(rows(second.events).at(-1)?.Content?.parts[0]?.text).toBe("resumed");
  expect(await metric(second.daemon, "spar_auto_continue_redriven")).toBe(1);
  await second.daemon.sigterm();
  // Finished: a further restart re-drives nothing.
  const third = await start(writeScript([say("unused")]), [], sessionDb);
  // A restart's offers are decided before the daemon listens (SessionHost.start): the count is final.
  expect(await metric(third.daemon, "spar_auto_continue_redriven")).toBe(0);
  await waitFor(
    () => (rows(third.events).some((row) => row.Content?.parts[0]?.text === "resumed") ? true : undefined),
    10_000,
    "the history replayed",
  );
  expect(continues(third.events)).toHaveLength(1);
}
