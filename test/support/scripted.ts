/**
 * Scripted-model helpers for integration tests: write a recording (one model call per line) and
 * start a daemon that replays it with an SSE collector already attached to the default session.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Daemon, startDaemon, tempDir } from "./daemon.ts";
import { type Collector, type Frame, collect } from "./sse-client.ts";

// The recorded-call builders are shared with the local triage demo (scripts/demo).
export { call, say } from "../../scripts/demo/triage-script.ts";

/**
 * One recorded model call that streams `marker` at once, then stalls for `delayMs` before its
 * answer. A test that cancels the call waits for `modelStreamed(marker)` first: the turn's
 * `streaming` status is published before the worker asks the model, and a turn cancelled before
 * that leaves this line unconsumed for the next turn to get.
 */
export const stall = (marker: string, delayMs: number, answer = "never") => ({
  request: {},
  responses: [
    { content: { role: "model", parts: [{ text: marker }] }, turnComplete: false },
    { delayMs, content: { role: "model", parts: [{ text: answer }] }, turnComplete: true },
  ],
});

/** Matches the text-delta frame of a `stall` line's marker. */
export const modelStreamed = (marker: string) => (frame: Frame) =>
  frame.event === "text-delta" && frame.data.text === marker;

export interface ToolResult {
  name: string;
  response: Record<string, unknown>;
}

/** The tool results among the `agent` rows a collector received, in order. */
export const toolResults = (events: Collector): ToolResult[] =>
  events.frames
    .filter((frame) => frame.event === "agent")
    .map((frame) => frame.data.event as { Content: { parts: Array<{ functionResponse?: ToolResult }> } | null })
    .flatMap((event) =>
      (event.Content?.parts ?? []).map((part) => part.functionResponse).filter((part) => part !== undefined),
    );

/** One recorded model call that fails with a provider status. */
export const failWith = (status: string, message: string) => ({
  request: {},
  responses: [{ error: { status, message } }],
});

export function writeScript(lines: readonly unknown[]): string {
  const path = join(tempDir(), "script.jsonl");
  writeFileSync(path, `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`);
  return path;
}

export interface ScriptedDaemon {
  daemon: Daemon;
  events: Collector;
  script: string;
  stop(): Promise<void>;
}

export async function startScripted(lines: readonly unknown[], args: string[] = []): Promise<ScriptedDaemon> {
  const script = writeScript(lines);
  const daemon = await startDaemon({ args: ["--model=scripted", `--script=${script}`, ...args] });
  const events = collect(`${daemon.baseUrl}/sessions/default/events`);
  await events.waitFor((frame) => frame.event === "usage-update");
  return {
    daemon,
    events,
    script,
    stop: async () => {
      events.close();
      await daemon.sigterm();
    },
  };
}
