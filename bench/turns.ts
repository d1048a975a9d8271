/**
 * Turn throughput benchmark (run: `bun bench/turns.ts [--sessions=100] [--seconds=20]`).
 *
 * Starts `spar agent --multi-session` (echo model, sqlite store in a temp dir), creates S
 * sessions, opens one SSE subscription per session, and runs one closed loop per session:
 * POST inject -> wait for that prompt's `turn-complete` on the session's stream -> repeat, for
 * ~20 s. Reports turns/s and inject-to-turn-complete latency (send of the POST to receipt of the
 * frame). In the same run, two references:
 *   - spar, 1 session, 1 loop: the unloaded turn latency floor of the same daemon;
 *   - baseline: raw Bun.serve (bench/baseline-turn-server.ts) doing one sqlite insert + response
 *     + one SSE turn-complete frame per inject, driven by the identical S-loop client.
 * Everything on 127.0.0.1, port 0; children killed on any exit.
 *
 * `--tracing [--rounds=3] [--warmup=15] [--before=<checkout>]`: tracing on against off (and against the build
 * before tracing) instead, see turns-tracing.ts.
 *
 * Then the PostgreSQL column (pg-turns.ts, D514): the same loops against `spar agent
 * --session-db-driver=postgres` on a throwaway server over its Unix socket. `--pg=off` skips it
 * (default: on when /usr/lib/postgresql/15/bin exists, D512); `--daemons=N` starts N agents on the
 * one database, sessions spread over them and injects on every one in turn; `--pg-agent-flags=a,b`
 * adds flags to those agents; `--only=pg` runs the PostgreSQL column alone; `--pg-statements` prints
 * the server's top statements per turn over the closed loop; `SPAR_BENCH_PROFILE=<dir>` profiles
 * the agents.
 */
import { join } from "node:path";
import { pgColumnWanted } from "./pg-cluster.ts";
import { pgTurnColumn } from "./pg-turns.ts";
import { tracingComparison } from "./turns-tracing.ts";
import {
  BUN,
  argFlags,
  benchTempDir,
  cpuSeconds,
  fmt,
  median,
  nowMs,
  quantile,
  rssKiB,
  spawnServer,
  table,
  type Server,
} from "./lib.ts";

interface Frame {
  event: string;
  data: string;
}

/** One SSE subscription over fetch, with a "next frame matching" waiter. */
class Stream {
  readonly #controller = new AbortController();
  #waiter: { match: (frame: Frame) => boolean; resolve: (frame: Frame) => void } | undefined;
  frames = 0;
  turnErrors = 0;
  closed = false;
  closeReason = "";

  private constructor() {}

  static async open(url: string): Promise<Stream> {
    const stream = new Stream();
    const response = await fetch(url, { headers: { accept: "text/event-stream" }, signal: stream.#controller.signal });
    if (response.status !== 200 || !response.body) throw new Error(`GET ${url}: HTTP ${response.status}`);
    void stream.#pump(response.body);
    return stream;
  }

  async #pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of body) {
        buffer += decoder.decode(chunk, { stream: true });
        for (;;) {
          const end = buffer.indexOf("\n\n");
          if (end < 0) break;
          const text = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (text.startsWith(":")) continue;
          const event = /(?:^|\n)event: ([^\n]*)/.exec(text)?.[1] ?? "message";
          const data = /(?:^|\n)data: ([^\n]*)/.exec(text)?.[1] ?? "";
          this.frames++;
          if (event === "turn-error") this.turnErrors++;
          const waiter = this.#waiter;
          if (waiter?.match({ event, data })) {
            this.#waiter = undefined;
            waiter.resolve({ event, data });
          }
        }
      }
      this.closeReason = "stream ended";
    } catch (error) {
      this.closeReason = this.#controller.signal.aborted ? "aborted" : `error: ${String(error)}`;
    }
    this.closed = true;
    this.#waiter?.resolve({ event: "closed", data: this.closeReason });
  }

  /** Resolves with the next frame that matches (or a synthetic `closed`/`timeout` frame). */
  next(match: (frame: Frame) => boolean, timeoutMs: number): Promise<Frame> {
    return new Promise((resolve) => {
      if (this.closed) return resolve({ event: "closed", data: this.closeReason });
      const timer = setTimeout(() => {
        this.#waiter = undefined;
        resolve({ event: "timeout", data: "" });
      }, timeoutMs);
      this.#waiter = {
        match,
        resolve: (frame) => {
          clearTimeout(timer);
          resolve(frame);
        },
      };
    });
  }

  close(): void {
    this.#controller.abort();
  }
}

/** --trace-slow=<ms>: list the turns slower than this (when they were sent), to find stalls. */
let traceSlowMs = 0;

interface LoopResult {
  label: string;
  sessions: number;
  seconds: number;
  turns: number;
  turnsPerSec: number;
  p50: number;
  p99: number;
  max: number;
  injectP50: number;
  injectP99: number;
  cpuPct: number;
  turnsPerCpuSec: number;
  rssKiB: number;
  failures: Record<string, number>;
}

async function postJson(url: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = { raw: text.slice(0, 200) };
  }
  return { status: response.status, json };
}

/** Create `count` sessions and subscribe to each; returns each session's base URL and stream. */
async function setup(server: Server, count: number, prefix: string): Promise<Array<{ url: string; stream: Stream }>> {
  const sessions: Array<{ url: string; stream: Stream }> = [];
  for (let i = 0; i < count; i++) {
    const created = await postJson(`${server.baseUrl}/sessions`, { sessionID: `${prefix}${i}` });
    if (created.status !== 201 || typeof created.json.url !== "string")
      throw new Error(`create session: HTTP ${created.status} ${JSON.stringify(created.json)}`);
    const url = created.json.url;
    sessions.push({ url, stream: await Stream.open(`${url}/events`) });
  }
  return sessions;
}

/**
 * One loop per session until the deadline: inject, wait for its turn-complete, repeat. With
 * `totalRate`, each loop starts its turns on a fixed schedule (phases staggered across loops) so
 * the offered load is `totalRate` turns/s; a loop that falls behind starts its next turn at once.
 */
async function runLoops(
  label: string,
  server: Server,
  sessions: Array<{ url: string; stream: Stream }>,
  seconds: number,
  record = true,
  totalRate?: number,
): Promise<LoopResult> {
  const latencies: number[] = [];
  const injectLatencies: number[] = [];
  const failures: Record<string, number> = {};
  const fail = (why: string) => (failures[why] = (failures[why] ?? 0) + 1);
  const cpu0 = cpuSeconds(server.pid);
  const start = nowMs();
  const deadline = start + seconds * 1000;
  let turns = 0;
  let lastEnd = start;
  const slow: string[] = [];
  const timeline: Array<[number, number]> = [];
  const period = totalRate ? (sessions.length / totalRate) * 1000 : 0;
  const loop = async (session: { url: string; stream: Stream }, index: number) => {
    for (let i = 0; i < 1_000_000 && nowMs() < deadline; i++) {
      if (period > 0) {
        const slot = start + (index / sessions.length) * period + i * period;
        if (slot >= deadline) break;
        const wait = slot - nowMs();
        if (wait > 0) await Bun.sleep(wait);
      }
      const sent = nowMs();
      const completion = session.stream.next(
        (frame) => frame.event === "turn-complete" || frame.event === "turn-error",
        10_000,
      );
      let promptId: unknown;
      try {
        const response = await postJson(`${session.url}/inject`, { message: `t=${sent.toFixed(3)}` });
        injectLatencies.push(nowMs() - sent);
        if (response.status !== 200) {
          fail(`inject HTTP ${response.status}`);
          await Bun.sleep(50);
          continue;
        }
        promptId = response.json.prompt_id;
      } catch (error) {
        fail(`inject error ${String(error).slice(0, 60)}`);
        await Bun.sleep(50);
        continue;
      }
      const frame = await completion;
      const done = nowMs();
      if (frame.event !== "turn-complete") {
        fail(`${frame.event}${frame.data ? ` ${frame.data.slice(0, 80)}` : ""}`);
        if (frame.event === "closed") return;
        continue;
      }
      const match = /"prompt_id":"([^"]+)"/.exec(frame.data)?.[1];
      if (match !== promptId) fail("turn-complete for another prompt");
      turns++;
      lastEnd = Math.max(lastEnd, done);
      latencies.push(done - sent);
      timeline.push([sent - start, done - sent]);
      if (traceSlowMs > 0 && done - sent > traceSlowMs)
        slow.push(`${((sent - start) / 1000).toFixed(2)}s:${Math.round(done - sent)}`);
    }
  };
  await Promise.all(sessions.map((session, index) => loop(session, index)));
  const cpu = cpuSeconds(server.pid) - cpu0;
  const elapsed = (lastEnd - start) / 1000;
  latencies.sort((a, b) => a - b);
  injectLatencies.sort((a, b) => a - b);
  const result: LoopResult = {
    label,
    sessions: sessions.length,
    seconds: elapsed,
    turns,
    turnsPerSec: turns / elapsed,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    max: latencies[latencies.length - 1] ?? Number.NaN,
    injectP50: quantile(injectLatencies, 0.5),
    injectP99: quantile(injectLatencies, 0.99),
    cpuPct: (cpu / elapsed) * 100,
    turnsPerCpuSec: cpu > 0 ? turns / cpu : Number.NaN,
    rssKiB: rssKiB(server.pid),
    failures,
  };
  // Turn latency early vs late in the phase: shows per-turn cost growing with session history.
  const firstSecond = median(timeline.filter(([at]) => at < 1000).map(([, latency]) => latency));
  const lastSecond = median(timeline.filter(([at]) => at > elapsed * 1000 - 1000).map(([, latency]) => latency));
  if (record && slow.length)
    console.error(`  ${slow.length} turns over ${traceSlowMs} ms (sent-at:latency): ${slow.slice(0, 40).join(" ")}`);
  if (record) {
    console.error(
      `${label}: ${turns} turns in ${fmt(elapsed)} s = ${fmt(result.turnsPerSec)} turns/s, p50 ${fmt(result.p50)} p99 ${fmt(result.p99)} max ${fmt(result.max)} ms, ` +
        `inject POST p50 ${fmt(result.injectP50)} p99 ${fmt(result.injectP99)} ms, server CPU ${fmt(result.cpuPct)}%, RSS ${result.rssKiB} KiB, ` +
        `median latency first 1 s ${fmt(firstSecond)} ms vs last 1 s ${fmt(lastSecond)} ms` +
        (Object.keys(failures).length ? `, failures ${JSON.stringify(failures)}` : ""),
    );
  }
  return result;
}

function streamSummary(sessions: Array<{ stream: Stream }>): string {
  const closed = sessions.filter((session) => session.stream.closed);
  const errors = sessions.reduce((sum, session) => sum + session.stream.turnErrors, 0);
  return `${closed.length} streams closed early${closed[0] ? ` (${closed[0].stream.closeReason})` : ""}, ${errors} turn-error frames`;
}

async function main(): Promise<void> {
  const flags = argFlags(process.argv.slice(2));
  const count = Number(flags.get("sessions") ?? 100);
  const seconds = Number(flags.get("seconds") ?? 20);
  const pacedSeconds = Number(flags.get("paced-seconds") ?? 10);
  const rate = Number(flags.get("rate") ?? 300);
  traceSlowMs = Number(flags.get("trace-slow") ?? 0);
  if (flags.has("tracing")) {
    await tracingComparison(
      { setup, run: runLoops },
      {
        count,
        seconds,
        rounds: Number(flags.get("rounds") ?? 3),
        warmupSeconds: Number(flags.get("warmup") ?? 15),
        before: flags.get("before"),
        ...(flags.has("sampler") ? { sampler: flags.get("sampler") } : {}),
      },
    );
    return;
  }
  const results: LoopResult[] = [];
  const pg = pgColumnWanted(flags);
  const sqlite = flags.get("only") !== "pg";

  if (sqlite) {
    try {
      await sparPhases(count, seconds, pacedSeconds, rate, results);
    } catch (error) {
      console.error(`spar phases FAILED: ${error instanceof Error ? error.message : String(error)}`);
    }
    try {
      await baselinePhases(count, seconds, pacedSeconds, rate, results);
    } catch (error) {
      console.error(`baseline phases FAILED: ${error instanceof Error ? error.message : String(error)}`);
    }
    printReport(results, rate);
  }
  if (pg) await pgTurnColumn({ setup, run: runLoops }, flags, { count, seconds, pacedSeconds, rate }, results);
}

async function sparPhases(
  count: number,
  seconds: number,
  pacedSeconds: number,
  rate: number,
  results: LoopResult[],
): Promise<void> {
  const spar = await spawnServer("spar", [
    BUN,
    join(import.meta.dir, "../src/main.ts"),
    "agent",
    "--attach-listen=127.0.0.1:0",
    `--session-db=${join(benchTempDir("spar-bench-turns-"), "sessions.db")}`,
    "--multi-session",
  ]);
  try {
    const sessions = await setup(spar, count, "bench-");
    await runLoops("warm-up", spar, sessions, 2, false);
    results.push(await runLoops(`spar, ${count} sessions x 1 loop`, spar, sessions, seconds));
    results.push(
      await runLoops(`spar, ${count} sessions, paced ${rate} turns/s`, spar, sessions, pacedSeconds, true, rate),
    );
    console.error(`  spar streams: ${streamSummary(sessions)}`);
    const solo = await setup(spar, 1, "solo-");
    results.push(await runLoops("spar, 1 session x 1 loop (reference)", spar, solo, Math.min(5, seconds)));
    const log = spar
      .log()
      .split("\n")
      .filter((line) => /\b(ERROR|WARN)\b/.test(line) && !line.includes("has no token"));
    if (log.length) console.error(`  spar log: ${log.length} warnings/errors, first: ${log.slice(0, 3).join(" | ")}`);
    for (const session of [...sessions, ...solo]) session.stream.close();
  } finally {
    await spar.stop();
  }
}

async function baselinePhases(
  count: number,
  seconds: number,
  pacedSeconds: number,
  rate: number,
  results: LoopResult[],
): Promise<void> {
  const baseline = await spawnServer("baseline", [
    BUN,
    join(import.meta.dir, "baseline-turn-server.ts"),
    `--db=${join(benchTempDir("spar-bench-turns-base-"), "baseline.db")}`,
  ]);
  try {
    const sessions = await setup(baseline, count, "bench-");
    await runLoops("warm-up", baseline, sessions, 2, false);
    results.push(await runLoops(`baseline, ${count} sessions x 1 loop`, baseline, sessions, seconds));
    results.push(
      await runLoops(
        `baseline, ${count} sessions, paced ${rate} turns/s`,
        baseline,
        sessions,
        pacedSeconds,
        true,
        rate,
      ),
    );
    for (const session of sessions) session.stream.close();
  } finally {
    await baseline.stop();
  }
}

function printReport(results: LoopResult[], rate: number): void {
  console.log(
    `\nTurns: one loop per session (inject -> wait for its turn-complete on the session's SSE stream), echo model, durable sqlite store.`,
  );
  console.log(
    `"x 1 loop" = closed loop, next inject as soon as the turn completes (max throughput); "paced" = each loop on a fixed schedule, ${rate} turns/s offered in total.`,
  );
  console.log(
    `baseline = raw Bun.serve doing 1 sqlite insert (WAL, synchronous=NORMAL) + JSON response + 1 SSE turn-complete frame per inject; same client.\n`,
  );
  console.log(
    table(
      [
        "run",
        "turns",
        "turns/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "inject POST p50/p99 ms",
        "server CPU%",
        "turns/CPU-s",
        "failures",
      ],
      results.map((result) => [
        result.label,
        String(result.turns),
        fmt(result.turnsPerSec),
        fmt(result.p50),
        fmt(result.p99),
        fmt(result.max),
        `${fmt(result.injectP50)} / ${fmt(result.injectP99)}`,
        fmt(result.cpuPct),
        fmt(result.turnsPerCpuSec),
        Object.keys(result.failures).length ? JSON.stringify(result.failures) : "0",
      ]),
    ),
  );
  const closed = results.find(
    (result) => result.label.startsWith("spar, ") && result.label.endsWith("x 1 loop") && result.sessions > 1,
  );
  const paced = results.find((result) => result.label.startsWith("spar, ") && result.label.includes("paced"));
  const base = results.find((result) => result.label.startsWith("baseline, ") && result.label.endsWith("x 1 loop"));
  const basePaced = results.find((result) => result.label.startsWith("baseline, ") && result.label.includes("paced"));
  if (closed && paced && base && basePaced) {
    console.log(
      `\nspar / baseline: closed-loop turns/s ${fmt(closed.turnsPerSec / base.turnsPerSec, 2)}, closed-loop p99 ${fmt(closed.p99 / base.p99, 2)}, paced p99 ${fmt(paced.p99 / basePaced.p99, 2)}.`,
    );
    console.log(
      `Targets (>= 300 turns/s, p99 < 100 ms): closed loop ${fmt(closed.turnsPerSec)} turns/s at p99 ${fmt(closed.p99)} ms; paced ${fmt(paced.turnsPerSec)} turns/s at p99 ${fmt(paced.p99)} ms.`,
    );
  }
}

await main();
process.exit(process.exitCode ?? 0);
