/**
 * Scripted-model helpers for integration tests: write a recording (one model call per line) and
 * start a daemon that replays it with an SSE collector already attached to the default session.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Daemon, startDaemon, tempDir } from "./daemon.ts";
import { type Collector, collect } from "./sse-client.ts";

/** One recorded model call answering with text. */
export const say = (text: string, extra: Record<string, unknown> = {}) => ({ request: {}, responses: [{ ...extra, content: { role: "model", parts: [{ text }] }, turnComplete: true }] });

/** One recorded model call that fails with a provider status. */
export const failWith = (status: string, message: string) => ({ request: {}, responses: [{ error: { status, message } }] });

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
