/**
 * A2A throughput benchmark (run: `bun bench/a2a.ts [--clients=50] [--seconds=10] [--floor-parts=both]`).
 *
 * Starts `spar svc --a2a-listen` (echo model, a workload exposing itself, sqlite store in a temp
 * dir: every task is a durable session) and, in the same run, the baseline: the SDK's own
 * DefaultRequestHandler with an InMemoryTaskStore and an echo executor under Bun.serve
 * (bench/baseline-a2a-server.ts, nothing durable). The identical client drives each: C closed
 * loops posting `message/send` (one JSON answer) for S seconds, then `message/stream` (read to
 * the stream's end). Reports tasks/s, median and p99 latency, and spar's throughput as a ratio of
 * the baseline's (target: at least 0.8x). A third server, the durable floor (the baseline's
 * handler plus only the two things every spar task must do: its rows committed before the answer
 * and its turn in a worker thread; `baseline-a2a-server.ts --durable`), measures how much of the
 * gap those two cost on this machine. `SPAR_BENCH_PROFILE=<dir>` writes spar's CPU profile there.
 * Everything on 127.0.0.1, port 0; children killed on exit.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  BUN,
  argFlags,
  benchTempDir,
  fmt,
  median,
  nowMs,
  quantile,
  spawnServer,
  table,
  threadCpuSeconds,
} from "./lib.ts";

const flags = argFlags(process.argv.slice(2));
const CLIENTS = Number(flags.get("clients") ?? 50);
const SECONDS = Number(flags.get("seconds") ?? 10);
/** The durable floor's parts: `both` (default), `commits` or `worker` (baseline-a2a-server.ts). */
const FLOOR_PARTS = flags.get("floor-parts") ?? "both";
if (!["both", "commits", "worker"].includes(FLOOR_PARTS))
  throw new Error(`--floor-parts=${FLOOR_PARTS}: expected both, commits or worker`);

interface Result {
  tasks: number;
  errors: number;
  latencies: number[];
  seconds: number;
}

function body(method: string, id: number): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    method,
    params: {
      message: {
        kind: "message",
        messageId: crypto.randomUUID(),
        role: "user",
        parts: [{ kind: "text", text: `ping ${id}` }],
      },
      configuration: { blocking: true },
    },
  });
}

/** One call: true when it ended completed. */
async function callOnce(url: string, method: string, id: number): Promise<boolean> {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: method === "message/stream" ? "text/event-stream" : "application/json",
    },
    body: body(method, id),
  });
  const text = await response.text();
  return response.status === 200 && text.includes('"completed"') && !text.includes('"error"');
}

/** The same turn through svc's main listener: POST /inject of a fresh incident (no A2A edge). */
async function injectOnce(url: string, id: number): Promise<boolean> {
  const response = await fetch(`${url}/inject`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ uid: `bench-${process.pid}-${id}`, reason: "Ping", name: "web" }),
  });
  await response.text();
  return response.status === 202;
}

async function drive(url: string, method: string): Promise<Result> {
  const latencies: number[] = [];
  let errors = 0;
  let id = 0;
  const started = nowMs();
  const until = started + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (nowMs() < until) {
        const at = nowMs();
        const call = method === "inject" ? injectOnce(url, ++id) : callOnce(url, method, ++id);
        const ok = await call.catch(() => false);
        if (ok) latencies.push(nowMs() - at);
        else errors++;
      }
    }),
  );
  return {
    tasks: latencies.length,
    errors,
    latencies: latencies.sort((a, b) => a - b),
    seconds: (nowMs() - started) / 1000,
  };
}

function workloadDirectory(): string {
  const directory = join(benchTempDir("spar-bench-a2a-"), "workload");
  mkdirSync(join(directory, "specialists"), { recursive: true });
  writeFileSync(
    join(directory, "workload.yaml"),
    ["name: echo", "description: Echoes the message.", "specialists:", "  - helper", "a2a:", "  expose: true", ""].join(
      "\n",
    ),
  );
  writeFileSync(
    join(directory, "specialists", "helper.tmpl"),
    ["---", "description: Unused under echo.", "tools:", "  mcp: []", "---", "Answer in one sentence.", ""].join("\n"),
  );
  return directory;
}

const spar = await spawnServer("spar svc", [
  BUN,
  ...(process.env.SPAR_BENCH_PROFILE
    ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${process.env.SPAR_BENCH_PROFILE}`]
    : []),
  "src/main.ts",
  "svc",
  "--listen=127.0.0.1:0",
  "--a2a-listen=127.0.0.1:0",
  `--session-db=${join(benchTempDir(), "sessions.db")}`,
  `--workload=${workloadDirectory()}`,
  "--model=echo",
]);
const a2aUrl = /A2A listener at (http:\/\/\S+)/.exec(spar.log())?.[1];
if (a2aUrl === undefined) throw new Error(`no A2A listener line:\n${spar.log()}`);
const baseline = await spawnServer("baseline", [BUN, join(import.meta.dir, "baseline-a2a-server.ts")]);
const floor = await spawnServer("durable floor", [
  BUN,
  join(import.meta.dir, "baseline-a2a-server.ts"),
  `--durable=${join(benchTempDir("spar-bench-a2a-floor-"), "floor.db")}`,
  `--floor-parts=${FLOOR_PARTS}`,
]);

const rows: string[][] = [];
try {
  for (const method of ["message/send", "message/stream"]) {
    // Warm both (spar's JIT would otherwise compile through its measured run), then measure the
    // baseline and spar back to back.
    await drive(baseline.baseUrl, method).catch(() => undefined);
    await drive(floor.baseUrl, method).catch(() => undefined);
    await drive(`${a2aUrl}/a2a`, method).catch(() => undefined);
    const base = await drive(baseline.baseUrl, method);
    const durableFloor = await drive(floor.baseUrl, method);
    const threadsBefore = threadCpuSeconds(spar.pid);
    const ours = await drive(`${a2aUrl}/a2a`, method);
    // Where spar's CPU goes per task, by thread (the main thread is the one Bun names bun.exe).
    const perTask = [...threadCpuSeconds(spar.pid)]
      .map(([name, total]) => [name, ((total - (threadsBefore.get(name) ?? 0)) * 1e6) / ours.tasks] as const)
      .filter(([, used]) => used > 0)
      .sort((a, b) => b[1] - a[1]);
    console.error(
      `${method}: spar CPU per task ${perTask.map(([name, used]) => `${name} ${fmt(used)} us`).join(", ")}`,
    );
    const rate = (result: Result) => result.tasks / result.seconds;
    for (const [name, result] of [
      ["baseline (SDK, in memory)", base],
      [`durable floor (baseline + ${FLOOR_PARTS === "both" ? "commits + worker hop" : FLOOR_PARTS})`, durableFloor],
      ["spar svc (durable)", ours],
    ] as const)
      rows.push([
        method,
        name,
        fmt(rate(result)),
        fmt(median(result.latencies)),
        fmt(quantile(result.latencies, 0.99)),
        String(result.errors),
        `${fmt(rate(result) / rate(base))}x`,
      ]);
  }
  const inject = await drive(spar.baseUrl, "inject");
  rows.push([
    "POST /inject",
    "spar svc main listener (same turn path)",
    fmt(inject.tasks / inject.seconds),
    fmt(median(inject.latencies)),
    fmt(quantile(inject.latencies, 0.99)),
    String(inject.errors),
    "",
  ]);
} finally {
  await spar.stop();
  await baseline.stop();
  await floor.stop();
}
process.stdout.write(
  `A2A, ${CLIENTS} concurrent clients, ${SECONDS} s per run, echo model\n\n${table(
    ["method", "server", "tasks/s", "median ms", "p99 ms", "errors", "ratio"],
    rows,
  )}\n`,
);
