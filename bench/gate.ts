/**
 * Write-gate benchmark (issue 15; run: `bun bench/gate.ts [--n=1000] [--rounds=1] [--quick]
 * [--park-concurrency=50] [--only=baseline|gated] [--cpu-prof=<dir>]`).
 *
 * Gated: `spar svc` runs the gated workload (bench/gate-parts.ts: a coordinator, one specialist
 * `worker` whose `apply_change` of the counting MCP server is mutating, so gated) against a
 * stateless fake model (bench/gate-model-server.ts, OpenAI chat completions over SSE). N incidents
 * are injected (at most `--park-concurrency` at a time) until all N sessions are parked at once on
 * their question; then all N are approved at once, each POST /resume on its own connection.
 * Reports approvals/s (to the last 202), executions/s (to the last execution the counting server
 * stamped), the latency from sending POST /resume to the server's execution of the call (its
 * `at`, same clock), the daemon's RSS per parked session and the executions counted twice.
 *
 * Baseline, in the same run: the same N `apply_change` calls issued at once straight through the
 * MCP SDK's Client over StdioClientTransport to the same counting server, no daemon, no gate.
 * Target: gated executions/s at least 0.5x the baseline's calls/s, and 0 duplicates. Each round runs
 * the baseline then the gated path back to back; the verdict is the median of the per-round
 * ratios (paired: the disk's speed swings between rounds on a shared machine), beside the ratio of
 * the two sides' medians.
 *
 * `--quick` is N = 50 (a smoke run by hand). `--cpu-prof=<dir>` runs the daemon under Bun's CPU
 * profiler (.cpuprofile and .md written to <dir> when it stops). Everything on 127.0.0.1, port 0; children killed
 * and temp dirs removed on any exit. Progress on stderr, markdown on stdout.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  COUNTING_SERVER,
  durableAppendsPerSecond,
  executions,
  gateWorkload,
  rawPost,
  tally,
  waitForExecutions,
} from "./gate-parts.ts";
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
  type Server,
  spawnServer,
  table,
} from "./lib.ts";

const TOKEN = "gate-bench-token";
const AUTH = { authorization: `Bearer ${TOKEN}` };
/**
 * Calls made (and approved) one by one before anything is measured, on both sides: enough for the
 * JIT to have compiled the paths (with 3, its compiler threads took a 2-core machine's CPU during
 * the measured burst). Their executions are the first lines of the count file.
 */
const WARM_UP = 50;
/** Replica counts of warm-up calls start here, clear of the measured 0..N-1. */
const WARM_BASE = 1_000_000;

interface RunResult {
  label: string;
  calls: number;
  /** Calls answered (baseline) or approvals answered 202 (gated) per second, from the first send. */
  answeredPerSec: number;
  /** Executions per second, from the first send to the last execution the server stamped. */
  executedPerSec: number;
  p50: number;
  p99: number;
  max: number;
  answerP50: number;
  answerP99: number;
  duplicates: number;
  strays: number;
  missing: number;
  failures: Record<string, number>;
  /** The disk's durable appends/s measured right before the run (the counting server does one per call). */
  appendsPerSec?: number;
  /** Gated only. */
  parkSeconds?: number;
  kibPerParked?: number;
  /** The daemon's RSS before parking, with all parked, and its peak (VmHWM) by the end of the approvals. */
  rssMiB?: { before: number; parked: number; peak: number };
  cpuSeconds?: number;
  unexpectedModelAnswers?: number;
  logProblems?: number;
}

/** Peak resident set size in KiB, from /proc/<pid>/status VmHWM. */
function peakRssKiB(pid: number): number {
  const match = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) : Number.NaN;
}

function count(failures: Record<string, number>, why: string): void {
  failures[why] = (failures[why] ?? 0) + 1;
}

function summarize(label: string, sent: Map<string, number>, start: number, answered: number[], countDir: string) {
  const found = tally(executions(countDir).slice(WARM_UP), sent);
  const lastAnswer = Math.max(...answered);
  answered.sort((a, b) => a - b);
  return {
    label,
    calls: sent.size,
    answeredPerSec: answered.length / ((lastAnswer - start) / 1000),
    executedPerSec: found.latencies.length / ((found.lastAt - start) / 1000),
    p50: quantile(found.latencies, 0.5),
    p99: quantile(found.latencies, 0.99),
    max: found.latencies[found.latencies.length - 1] ?? Number.NaN,
    answerP50: quantile(answered, 0.5) - start,
    answerP99: quantile(answered, 0.99) - start,
    duplicates: found.duplicates,
    strays: found.strays,
    missing: found.missing,
  };
}

/** The same N calls, all at once, through the SDK's client straight to the counting server. */
async function baselineRun(n: number): Promise<RunResult> {
  const countDir = benchTempDir("spar-bench-gate-base-");
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  const transport = new StdioClientTransport({
    command: BUN,
    args: [COUNTING_SERVER],
    env: { ...env, COUNT_DIR: countDir, COUNT_TIMESTAMPS: "1" },
    stderr: "ignore",
  });
  const client = new Client({ name: "gate-bench", version: "1.0.0" });
  await client.connect(transport);
  const call = (replicas: number, key: string) =>
    client.callTool({ name: "apply_change", arguments: { replicas }, _meta: { idempotency_key: key } }, undefined, {
      timeout: 600_000,
    });
  const failures: Record<string, number> = {};
  try {
    for (let index = 0; index < WARM_UP; index++) await call(WARM_BASE + index, `warm-${index}`);
    const sent = new Map<string, number>();
    const answered: number[] = [];
    const start = nowMs();
    await Promise.all(
      Array.from({ length: n }, async (_, index) => {
        const key = `base-${index}`;
        sent.set(key, nowMs());
        try {
          const result = await call(index, key);
          if (result.isError) count(failures, "isError");
          answered.push(nowMs());
        } catch (error) {
          count(failures, `error ${String(error).slice(0, 60)}`);
        }
      }),
    );
    await waitForExecutions(countDir, n + WARM_UP, 5_000);
    return { ...summarize("baseline: MCP client, no gate", sent, start, answered, countDir), failures };
  } finally {
    await client.close();
  }
}

interface Parked {
  sessionId: string;
  interruptId: string;
}

async function inject(svc: Server, uid: string): Promise<Parked | string> {
  try {
    const response = await fetch(`${svc.baseUrl}/inject`, {
      method: "POST",
      headers: { "content-type": "application/json", ...AUTH },
      body: JSON.stringify({ uid, reason: "ScaleUp", name: "web" }),
      signal: AbortSignal.timeout(120_000),
    });
    const body = (await response.json()) as { state?: string; session_id?: string; pending?: Parked[] };
    const question = (body.pending ?? [])[0] as { interrupt_id?: string } | undefined;
    if (response.status !== 202 || body.state !== "paused" || question?.interrupt_id === undefined)
      return `inject ${response.status} ${body.state ?? JSON.stringify(body).slice(0, 80)}`;
    return { sessionId: String(body.session_id), interruptId: question.interrupt_id };
  } catch (error) {
    return `inject error ${String(error).slice(0, 60)}`;
  }
}

/** Inject `uids`, at most `concurrency` outstanding; the parked ones, and why the others failed. */
async function parkAll(svc: Server, uids: string[], concurrency: number, failures: Record<string, number>) {
  const parked: Parked[] = [];
  let next = 0;
  const lane = async () => {
    while (next < uids.length) {
      const uid = uids[next++] as string;
      const outcome = await inject(svc, uid);
      if (typeof outcome === "string") count(failures, outcome);
      else parked.push(outcome);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return parked;
}

function resume(svc: Server, question: Parked, timeoutMs: number) {
  const body = { session_id: question.sessionId, interrupt_id: question.interruptId, response: { verdict: "approve" } };
  return rawPost(svc.port, "/resume", body, AUTH, timeoutMs);
}

async function startGated(profileDir: string | undefined): Promise<{ svc: Server; model: Server; countDir: string }> {
  const model = await spawnServer("gate-model", [BUN, join(import.meta.dir, "gate-model-server.ts")]);
  const workload = gateWorkload();
  const store = benchTempDir("spar-bench-gate-store-");
  const svc = await spawnServer(
    "svc",
    [
      BUN,
      ...(profileDir === undefined ? [] : ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${profileDir}`]),
      join(import.meta.dir, "../src/main.ts"),
      "svc",
      `--workload=${workload.directory}`,
      "--provider=openai-compatible",
      "--model=gate-bench",
      `--model-base-url=${model.baseUrl}/v1`,
      `--session-db=${join(store, "svc.db")}`,
      `--audit-log=${join(store, "audit.jsonl")}`,
      "--listen=127.0.0.1:0",
    ],
    60_000,
    { SVC_INJECT_TOKEN: TOKEN },
  );
  return { svc, model, countDir: workload.countDir };
}

/** N sessions parked at once, then all approved at once. */
async function gatedRun(n: number, parkConcurrency: number, profileDir?: string): Promise<RunResult> {
  const { svc, model, countDir } = await startGated(profileDir);
  const failures: Record<string, number> = {};
  try {
    for (let index = 0; index < WARM_UP; index++) {
      const question = await inject(svc, `warm-${WARM_BASE + index}`);
      if (typeof question === "string") throw new Error(`warm-up: ${question}; log:\n${svc.log().slice(-2000)}`);
      const answer = await resume(svc, question, 60_000);
      if (answer.status !== 202) throw new Error(`warm-up resume: HTTP ${answer.status} ${answer.body.slice(0, 200)}`);
    }
    await Bun.sleep(500);
    const rssBefore = rssKiB(svc.pid);
    const parkStart = nowMs();
    const uids = Array.from({ length: n }, (_, index) => `bench-${index}`);
    const parked = await parkAll(svc, uids, parkConcurrency, failures);
    const parkSeconds = (nowMs() - parkStart) / 1000;
    await Bun.sleep(500);
    const rssParked = rssKiB(svc.pid);
    console.error(
      `  parked ${parked.length}/${n} in ${fmt(parkSeconds)} s; RSS ${fmt(rssBefore / 1024)} -> ${fmt(rssParked / 1024)} MiB`,
    );
    if (executions(countDir).length !== WARM_UP) count(failures, "a call ran before its approval");

    const sent = new Map<string, number>();
    const answered: number[] = [];
    const cpu0 = cpuSeconds(svc.pid);
    const start = nowMs();
    await Promise.all(
      parked.map(async (question) => {
        sent.set(question.interruptId, nowMs());
        try {
          const answer = await resume(svc, question, 600_000);
          if (answer.status === 202) answered.push(nowMs());
          else count(failures, `resume ${answer.status} ${answer.body.slice(0, 80)}`);
        } catch (error) {
          count(failures, `resume error ${String(error).slice(0, 60)}`);
        }
      }),
    );
    const cpu = cpuSeconds(svc.pid) - cpu0;
    const peak = peakRssKiB(svc.pid);
    await waitForExecutions(countDir, parked.length + WARM_UP, 10_000);
    const stats = (await (await fetch(`${model.baseUrl}/stats`)).json()) as Record<string, number>;
    const problems = svc
      .log()
      .split("\n")
      .filter((line) => /"level":"(error|warn)"|\b(ERROR|WARN)\b/.test(line));
    if (problems.length > 0) console.error(`  svc log: ${problems.length} warnings/errors, first: ${problems[0]}`);
    return {
      ...summarize(`gated: svc, ${n} parked, all approved`, sent, start, answered, countDir),
      failures,
      parkSeconds,
      kibPerParked: (rssParked - rssBefore) / Math.max(1, parked.length),
      rssMiB: { before: rssBefore / 1024, parked: rssParked / 1024, peak: peak / 1024 },
      cpuSeconds: cpu,
      unexpectedModelAnswers: stats.unexpected ?? 0,
      logProblems: problems.length,
    };
  } finally {
    await svc.stop(10_000);
    await model.stop();
  }
}

function report(run: RunResult): void {
  const failures = Object.keys(run.failures).length ? ` failures ${JSON.stringify(run.failures)}` : "";
  console.error(
    `${run.label} (disk ${fmt(run.appendsPerSec ?? Number.NaN)} durable appends/s before): answered ${fmt(run.answeredPerSec)}/s, executed ${fmt(run.executedPerSec)}/s, ` +
      `send->execution p50 ${fmt(run.p50)} p99 ${fmt(run.p99)} max ${fmt(run.max)} ms, ` +
      `duplicates ${run.duplicates}, strays ${run.strays}, missing ${run.missing}${failures}`,
  );
}

function medianOf(runs: RunResult[], pick: (run: RunResult) => number | undefined): number {
  return median(runs.map(pick).filter((value): value is number => value !== undefined));
}

function sum(runs: RunResult[], pick: (run: RunResult) => number | undefined): number {
  return runs.reduce((total, run) => total + (pick(run) ?? 0), 0);
}

function printTable(n: number, base: RunResult[], gated: RunResult[]): void {
  console.log(`\nWrite gate, N = ${n}, ${Math.max(base.length, gated.length)} round(s), medians of rounds.\n`);
  const row = (label: string, runs: RunResult[], answered: string) => [
    label,
    fmt(medianOf(runs, (run) => run.executedPerSec)),
    `${fmt(medianOf(runs, (run) => run.answeredPerSec))} ${answered}`,
    fmt(medianOf(runs, (run) => run.p50)),
    fmt(medianOf(runs, (run) => run.p99)),
    fmt(medianOf(runs, (run) => run.max)),
    String(sum(runs, (run) => run.duplicates)),
    `${sum(runs, (run) => run.strays)} / ${sum(runs, (run) => run.missing)}`,
    String(sum(runs, (run) => Object.values(run.failures).reduce((a, b) => a + b, 0))),
    fmt(medianOf(runs, (run) => run.appendsPerSec)),
  ];
  const rows: string[][] = [];
  if (base.length) rows.push(row("baseline: MCP client, no gate", base, "calls"));
  if (gated.length) rows.push(row(`gated: svc, ${n} parked, all approved`, gated, "approvals"));
  const headers = ["run", "executions/s", "answered/s", "p50 ms", "p99 ms", "max ms", "duplicates", "strays / missing"];
  console.log(table([...headers, "failures", "disk appends/s"], rows));
  if (gated.length) {
    console.log(
      `\ngated: parked in ${fmt(medianOf(gated, (run) => run.parkSeconds))} s, ` +
        `${fmt(medianOf(gated, (run) => run.kibPerParked))} KiB RSS per parked session ` +
        `(daemon RSS ${fmt(medianOf(gated, (run) => run.rssMiB?.before))} MiB before, ` +
        `${fmt(medianOf(gated, (run) => run.rssMiB?.parked))} parked, peak ${fmt(medianOf(gated, (run) => run.rssMiB?.peak))}), ` +
        `${fmt(medianOf(gated, (run) => run.cpuSeconds))} daemon CPU-s for the approvals, ` +
        `${sum(gated, (run) => run.unexpectedModelAnswers)} unexpected model answers, ` +
        `${sum(gated, (run) => run.logProblems)} daemon log warnings/errors.`,
    );
  }
  if (base.length && gated.length) {
    const executed = medianOf(gated, (run) => run.executedPerSec) / medianOf(base, (run) => run.executedPerSec);
    const approved = medianOf(gated, (run) => run.answeredPerSec) / medianOf(base, (run) => run.answeredPerSec);
    const duplicates = sum(gated, (run) => run.duplicates) + sum(base, (run) => run.duplicates);
    // Each round's two runs share the machine's state (disk, other load): their ratio is paired.
    const paired = gated.map((run, index) => run.executedPerSec / (base[index]?.executedPerSec ?? Number.NaN));
    const pairedMedian = median(paired.filter((ratio) => !Number.isNaN(ratio)));
    console.log(
      `gated / baseline: executions/s ${fmt(executed, 2)} (ratio of the medians), per round ${paired.map((ratio) => fmt(ratio, 2)).join(", ")}, ` +
        `median of the per-round ratios ${fmt(pairedMedian, 2)} (target >= 0.5: ${pairedMedian >= 0.5 ? "met" : "NOT met"}); ` +
        `answered/s ${fmt(approved, 2)}; duplicates ${duplicates} (target 0: ${duplicates === 0 ? "met" : "NOT met"}).`,
    );
  }
}

async function main(): Promise<void> {
  const flags = argFlags(process.argv.slice(2));
  const n = flags.has("quick") ? 50 : Number(flags.get("n") ?? 1000);
  const rounds = Number(flags.get("rounds") ?? 1);
  const parkConcurrency = Number(flags.get("park-concurrency") ?? 50);
  const only = flags.get("only");
  const base: RunResult[] = [];
  const gated: RunResult[] = [];
  for (let round = 1; round <= rounds; round++) {
    console.error(`round ${round}/${rounds}, N = ${n}`);
    if (only !== "gated")
      try {
        const appendsPerSec = durableAppendsPerSecond();
        base.push({ ...(await baselineRun(n)), appendsPerSec });
        report(base[base.length - 1] as RunResult);
      } catch (error) {
        console.error(`baseline FAILED: ${error instanceof Error ? error.message : String(error)}`);
      }
    if (only !== "baseline")
      try {
        const appendsPerSec = durableAppendsPerSecond();
        gated.push({ ...(await gatedRun(n, parkConcurrency, flags.get("cpu-prof"))), appendsPerSec });
        report(gated[gated.length - 1] as RunResult);
      } catch (error) {
        console.error(`gated FAILED: ${error instanceof Error ? error.message : String(error)}`);
      }
  }
  printTable(n, base, gated);
}

await main();
process.exit(0);
