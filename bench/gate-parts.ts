/**
 * Parts of bench/gate.ts: the gated workload directory (the workload of
 * test/support/gated-workload.ts, with the counting server stamping its executions), the counting
 * server's lines read back and tallied against the keys the run expects, the disk's rate of the
 * server's durable appends (both paths are bound by it), and one raw HTTP POST
 * (its own TCP connection, so a thousand go out at once: Bun's fetch holds back past 256).
 */
import { closeSync, fsyncSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { type CountedCall, COUNTING_SERVER, countedCalls } from "../test/fixtures/mcp/counting.ts";
import { type GatedWorkload, writeGatedWorkload } from "../test/support/gated-workload.ts";
import { type RawAnswer, rawHttp } from "../test/support/raw-http.ts";
import { benchTempDir, nowMs } from "./lib.ts";

export { COUNTING_SERVER };

/** A coordinator with one specialist `worker` whose tools are the counting server's (`blocker`), stamping executions. */
export function gateWorkload(): GatedWorkload {
  return writeGatedWorkload(benchTempDir("spar-bench-gate-"), { serverEnv: { COUNT_TIMESTAMPS: "1" } });
}

/** Every execution of `tool` the counting server recorded (with `at`: COUNT_TIMESTAMPS=1). */
export function executions(countDir: string, tool = "apply_change"): CountedCall[] {
  return countedCalls(countDir, tool);
}

/** Poll until at least `count` executions are written, or the deadline; answers what is there. */
export async function waitForExecutions(countDir: string, count: number, timeoutMs: number): Promise<CountedCall[]> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const found = executions(countDir);
    if (found.length >= count || performance.now() > deadline) return found;
    await Bun.sleep(50);
  }
}

export interface Tally {
  /** Executions of a key seen before (the same call run again). */
  duplicates: number;
  /** Executions whose key the run never issued (or that carried none). */
  strays: number;
  /** Keys the run issued that never executed. */
  missing: number;
  /** Execution time minus send time, ms, of each issued key that executed, ascending. */
  latencies: number[];
  /** The last execution's time (epoch ms). */
  lastAt: number;
}

/** Match the executions to the keys sent (key -> epoch ms it was sent) by `_meta.idempotency_key`. */
export function tally(found: readonly CountedCall[], sent: ReadonlyMap<string, number>): Tally {
  const seen = new Set<string>();
  let duplicates = 0;
  let strays = 0;
  let lastAt = Number.NaN;
  const latencies: number[] = [];
  for (const execution of found) {
    const key = execution.meta?.idempotency_key;
    const sentAt = typeof key === "string" ? sent.get(key) : undefined;
    if (typeof key !== "string" || sentAt === undefined) {
      strays++;
      continue;
    }
    if (seen.has(key)) {
      duplicates++;
      continue;
    }
    seen.add(key);
    const at = execution.at ?? Number.NaN;
    latencies.push(at - sentAt);
    lastAt = Number.isNaN(lastAt) ? at : Math.max(lastAt, at);
  }
  latencies.sort((a, b) => a - b);
  return { duplicates, strays, missing: sent.size - seen.size, latencies, lastAt };
}

/** POST `body` as JSON on a connection of its own (Connection: close); the answer read to its end. */
export function rawPost(
  port: number,
  path: string,
  body: unknown,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<RawAnswer> {
  const text = JSON.stringify(body);
  const head = [
    `POST ${path} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(text)}`,
    "Connection: close",
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ].join("\r\n");
  return rawHttp(port, `${head}\r\n\r\n${text}`, timeoutMs);
}

/**
 * Durable appends per second in the temp directory, done the counting server's way (open, write
 * one line, fsync, close): each execution costs one, so on a shared disk this bounds both paths.
 */
export function durableAppendsPerSecond(count = 200): number {
  const file = join(benchTempDir("spar-bench-gate-fsync-"), "probe.calls");
  const start = nowMs();
  for (let index = 0; index < count; index++) {
    const descriptor = openSync(file, "a");
    try {
      writeSync(descriptor, `{"args":{"replicas":${index}},"meta":null}\n`);
      fsyncSync(descriptor);
    } finally {
      closeSync(descriptor);
    }
  }
  return count / ((nowMs() - start) / 1000);
}
