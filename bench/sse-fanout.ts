/**
 * SSE fan-out benchmark (run: `bun bench/sse-fanout.ts [--rounds=3] [--ns=100,1000,5000] [--window=W] [--baseline=script.ts]`).
 *
 * One session, N subscribers on GET /sessions/default/events, each a raw TCP client in a separate
 * client process (bench/sse-client.ts). A producer here injects `t=<send time>` messages; every
 * inject is one echo turn (~9 frames). The same run measures a baseline: a raw Bun.serve SSE
 * fan-out (bench/baseline-sse-server.ts) publishing the same nine frames per POST.
 *
 * Per case (server x N x round) on a fresh server process:
 *   1. warm up with 3 injects and no subscribers, read VmRSS;
 *   2. connect N subscribers, wait for each one's boot frames, read VmRSS again -> KiB/subscriber;
 *   3. paced phase: injects at a steady rate (same offered load for both servers) -> latency;
 *   4. saturated phase: closed loop, at most W injects whose model row has not yet reached every
 *      subscriber -> max delivered events/s;
 *   each phase also reads the server's utime+stime for events per server-CPU-second.
 * Latency = receive time in the client minus the stamp, for every frame carrying a stamp (user
 * row, text-delta, model row), on the shared clock performance.timeOrigin + performance.now().
 * Prints medians over rounds. Everything on 127.0.0.1, port 0; children killed on any exit.
 */
import {
  BUN,
  argFlags,
  benchTempDir,
  cpuSeconds,
  fmt,
  median,
  nowMs,
  rssKiB,
  spawnServer,
  table,
  track,
  untrack,
  type Server,
} from "./lib.ts";
import { join } from "node:path";

type ServerKind = "baseline" | "spar";

interface NConfig {
  pacedRate: number;
  pacedMs: number;
  satMs: number;
  window: number;
  maxInjects: number;
}

/**
 * Paced: the same offered load (~36-45k deliveries/s) at every N. Saturated: window W chosen so
 * the server (or the client) is near one core busy while each subscriber lags at most W*9 frames,
 * far under the daemon's 4096-frame subscriber buffer. Override W with --window=.
 */
const CONFIG: Record<number, NConfig> = {
  100: { pacedRate: 40, pacedMs: 3000, satMs: 3000, window: 16, maxInjects: 3000 },
  1000: { pacedRate: 4, pacedMs: 4000, satMs: 4000, window: 8, maxInjects: 400 },
  5000: { pacedRate: 1, pacedMs: 5000, satMs: 5000, window: 4, maxInjects: 60 },
};

let windowOverride: number | undefined;

function configFor(n: number): NConfig {
  const known = CONFIG[n];
  if (known) return windowOverride ? { ...known, window: windowOverride } : known;
  // Unlisted N: keep the offered paced load near 36k deliveries/s.
  return {
    pacedRate: Math.max(0.5, 4000 / n),
    pacedMs: 4000,
    satMs: 4000,
    window: windowOverride ?? (n >= 2000 ? 4 : 8),
    maxInjects: 400,
  };
}

interface ClientStats {
  type: "stats";
  frames: number;
  stampedFrames: number;
  firstRecv: number;
  lastRecv: number;
  latencySamples: number;
  p50: number;
  p99: number;
  max: number;
  live: number;
  closed: number;
  minFrames: number;
  maxFrames: number;
  seqGaps: number;
  errors: string[];
  clientCpuPct: number;
}

type ClientMessage =
  | { type: "hello" }
  | { type: "ready"; live: number; failed: number; connectMs: number; errors: string[] }
  | { type: "done"; t: string }
  | { type: "count"; frames: number; live: number }
  | ClientStats;

/** The load client subprocess and its IPC channel. */
class Client {
  readonly #proc: Bun.Subprocess;
  readonly #waiters: Array<{ type: string; resolve: (message: ClientMessage) => void }> = [];
  onDone: (stamp: string) => void = () => {};

  private constructor() {
    this.#proc = Bun.spawn([BUN, join(import.meta.dir, "sse-client.ts")], {
      stdin: "ignore",
      stdout: "inherit",
      stderr: "inherit",
      ipc: (message: ClientMessage) => this.#receive(message),
    });
    track(this.#proc);
  }

  static async start(): Promise<Client> {
    const client = new Client();
    await client.next("hello", 10_000);
    return client;
  }

  get pid(): number {
    return this.#proc.pid;
  }

  #receive(message: ClientMessage): void {
    if (message.type === "done") {
      this.onDone(message.t);
      return;
    }
    const index = this.#waiters.findIndex((waiter) => waiter.type === message.type);
    if (index >= 0) {
      const [waiter] = this.#waiters.splice(index, 1);
      waiter?.resolve(message);
    }
  }

  next<T extends ClientMessage["type"]>(type: T, timeoutMs: number): Promise<Extract<ClientMessage, { type: T }>> {
    return new Promise((resolve, reject) => {
      const waiter = {
        type,
        resolve: (message: ClientMessage) => {
          clearTimeout(timer);
          resolve(message as Extract<ClientMessage, { type: T }>);
        },
      };
      const timer = setTimeout(() => {
        const index = this.#waiters.indexOf(waiter);
        if (index >= 0) this.#waiters.splice(index, 1);
        reject(new Error(`client: no ${type} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }

  send(message: { type: string; [key: string]: unknown }): void {
    this.#proc.send(message);
  }

  /** Send `{type: command}` and wait for the reply of type `replyType`. */
  async request<T extends ClientMessage["type"]>(
    command: string,
    replyType: T,
    timeoutMs = 30_000,
  ): Promise<Extract<ClientMessage, { type: T }>> {
    const reply = this.next(replyType, timeoutMs);
    this.send({ type: command });
    return await reply;
  }

  async close(): Promise<void> {
    try {
      this.send({ type: "close" });
    } catch {
      // channel already gone
    }
    const timer = setTimeout(() => this.#proc.kill("SIGKILL"), 2000);
    await this.#proc.exited;
    clearTimeout(timer);
    untrack(this.#proc);
  }
}

interface PhaseResult {
  injects: number;
  injectErrors: number;
  skipped: number;
  undelivered: number;
  frames: number;
  evPerSec: number;
  evPerCpuSec: number;
  serverCpuPct: number;
  clientCpuPct: number;
  p50: number;
  p99: number;
  max: number;
  closed: number;
  minFrames: number;
  maxFrames: number;
  seqGaps: number;
  errors: string[];
}

interface CaseResult {
  server: ServerKind;
  n: number;
  round: number;
  connected: number;
  connectMs: number;
  rssBeforeKiB: number;
  rssAfterKiB: number;
  rssLoadedKiB: number;
  kibPerSub: number;
  paced: PhaseResult;
  saturated: PhaseResult;
  serverErrors: string[];
}

async function inject(server: Server, stamp: string): Promise<boolean> {
  try {
    const response = await fetch(`${server.baseUrl}/sessions/default/inject`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: `t=${stamp}` }),
    });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

/** Stamps sent whose model row has not reached every subscriber yet. */
class Outstanding {
  readonly pending = new Set<string>();
  #wakers: Array<() => void> = [];

  add(stamp: string): void {
    this.pending.add(stamp);
  }

  done(stamp: string): void {
    if (!this.pending.delete(stamp)) return;
    const wakers = this.#wakers;
    this.#wakers = [];
    for (const wake of wakers) wake();
  }

  /** Resolves on the next completion or after `ms`. */
  changed(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wakers.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  async drained(timeoutMs: number): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (this.pending.size > 0 && performance.now() < deadline)
      await this.changed(Math.max(1, deadline - performance.now()));
    return this.pending.size === 0;
  }
}

/** Wait until the client's frame count stops moving (trailing frames after the last model row). */
async function settle(client: Client, maxMs = 5000): Promise<void> {
  const deadline = performance.now() + maxMs;
  let last = -1;
  while (performance.now() < deadline) {
    const { frames } = await client.request("count", "count");
    if (frames === last) return;
    last = frames;
    await Bun.sleep(250);
  }
}

async function runPhase(
  server: Server,
  client: Client,
  mode: "paced" | "saturated",
  config: NConfig,
): Promise<PhaseResult> {
  const outstanding = new Outstanding();
  client.onDone = (stamp) => outstanding.done(stamp);
  client.send({ type: "reset" });
  await client.request("count", "count"); // the reset has been applied
  const cpu0 = cpuSeconds(server.pid);
  const start = nowMs();
  let injects = 0;
  let injectErrors = 0;
  let skipped = 0;
  const inflight = new Set<Promise<void>>();
  const fire = () => {
    const stamp = nowMs().toFixed(3);
    outstanding.add(stamp);
    injects++;
    const done: Promise<void> = inject(server, stamp).then((ok) => {
      if (!ok) {
        injectErrors++;
        outstanding.done(stamp);
      }
      inflight.delete(done);
    });
    inflight.add(done);
  };
  if (mode === "paced") {
    const interval = 1000 / config.pacedRate;
    for (let i = 0; i < config.maxInjects; i++) {
      const target = start + i * interval;
      if (target - start >= config.pacedMs) break;
      const wait = target - nowMs();
      if (wait > 0) await Bun.sleep(wait);
      // Keep the producer open-loop but bounded: never more than 64 POSTs in flight.
      if (inflight.size >= 64) {
        skipped++;
        continue;
      }
      fire();
    }
  } else {
    const deadline = start + config.satMs;
    while (nowMs() < deadline && injects < config.maxInjects) {
      if (outstanding.pending.size < config.window) fire();
      else await outstanding.changed(Math.max(1, deadline - nowMs()));
    }
  }
  await Promise.all(inflight);
  const deliveredAll = await outstanding.drained(30_000);
  await settle(client);
  const cpu1 = cpuSeconds(server.pid);
  const stats = await client.request("collect", "stats", 60_000);
  const seconds = (stats.lastRecv - start) / 1000;
  const cpu = cpu1 - cpu0;
  const wall = (nowMs() - start) / 1000;
  return {
    injects,
    injectErrors,
    skipped,
    undelivered: deliveredAll ? 0 : outstanding.pending.size,
    frames: stats.frames,
    evPerSec: stats.frames / seconds,
    evPerCpuSec: cpu > 0 ? stats.frames / cpu : Number.NaN,
    serverCpuPct: (cpu / wall) * 100,
    clientCpuPct: stats.clientCpuPct,
    p50: stats.p50,
    p99: stats.p99,
    max: stats.max,
    closed: stats.closed,
    minFrames: stats.minFrames,
    maxFrames: stats.maxFrames,
    seqGaps: stats.seqGaps,
    errors: stats.errors,
  };
}

/** --baseline=<script>: run another baseline server script (same routes, same log line). */
let baselineScript = join(import.meta.dir, "baseline-sse-server.ts");

async function startServer(kind: ServerKind): Promise<Server> {
  if (kind === "baseline") return await spawnServer("baseline", [BUN, baselineScript]);
  const db = join(benchTempDir("spar-bench-fanout-"), "sessions.db");
  return await spawnServer("spar", [
    BUN,
    join(import.meta.dir, "../src/main.ts"),
    "agent",
    "--attach-listen=127.0.0.1:0",
    `--session-db=${db}`,
  ]);
}

function serverErrors(server: Server): string[] {
  return server
    .log()
    .split("\n")
    .filter((line) => /\b(ERROR|WARN)\b/.test(line) && !line.includes("has no token"))
    .slice(0, 10);
}

async function runCase(kind: ServerKind, n: number, round: number): Promise<CaseResult> {
  const config = configFor(n);
  const server = await startServer(kind);
  let client: Client | undefined;
  try {
    for (let i = 0; i < 3; i++) await inject(server, nowMs().toFixed(3));
    await Bun.sleep(300);
    const rssBeforeKiB = rssKiB(server.pid);
    client = await Client.start();
    // Skip replay of the warm-up rows: start every subscriber at the live head.
    const path = kind === "spar" ? "/sessions/default/events?since=1000000000" : "/sessions/default/events";
    const ready = client.next("ready", 120_000);
    client.send({ type: "connect", host: "127.0.0.1", port: server.port, path, n });
    const { live, connectMs, errors } = await ready;
    if (live < n) console.error(`  ${kind} N=${n}: only ${live}/${n} subscribers connected (${errors.join("; ")})`);
    await Bun.sleep(500);
    const rssAfterKiB = rssKiB(server.pid);
    const paced = await runPhase(server, client, "paced", config);
    const saturated = await runPhase(server, client, "saturated", config);
    const rssLoadedKiB = rssKiB(server.pid);
    return {
      server: kind,
      n,
      round,
      connected: live,
      connectMs,
      rssBeforeKiB,
      rssAfterKiB,
      rssLoadedKiB,
      kibPerSub: (rssAfterKiB - rssBeforeKiB) / Math.max(1, live),
      paced,
      saturated,
      serverErrors: serverErrors(server),
    };
  } finally {
    await client?.close();
    await server.stop();
  }
}

function describe(result: CaseResult): string {
  const phase = (name: string, p: PhaseResult) =>
    `${name}: ${p.injects} inj, ${p.frames} frames, ${fmt(p.evPerSec)} ev/s, ${fmt(p.evPerCpuSec)} ev/CPU-s, srv ${fmt(p.serverCpuPct)}% cli ${fmt(p.clientCpuPct)}% CPU, ` +
    `p50 ${fmt(p.p50)} p99 ${fmt(p.p99)} max ${fmt(p.max)} ms, frames/sub ${p.minFrames}..${p.maxFrames}, closed ${p.closed}, gaps ${p.seqGaps}` +
    (p.injectErrors || p.undelivered || p.skipped
      ? `, inject errors ${p.injectErrors}, undelivered ${p.undelivered}, skipped ${p.skipped}`
      : "") +
    (p.errors.length ? `, errors: ${p.errors.join(" | ")}` : "");
  return [
    `[round ${result.round}] ${result.server} N=${result.n}: connected ${result.connected} in ${fmt(result.connectMs / 1000)} s, RSS ${result.rssBeforeKiB} -> ${result.rssAfterKiB} KiB (${fmt(result.kibPerSub)} KiB/sub), after load ${result.rssLoadedKiB} KiB`,
    `    ${phase("paced", result.paced)}`,
    `    ${phase("saturated", result.saturated)}`,
    ...(result.serverErrors.length ? [`    server log: ${result.serverErrors.join(" | ")}`] : []),
  ].join("\n");
}

async function main(): Promise<void> {
  const flags = argFlags(process.argv.slice(2));
  const rounds = Number(flags.get("rounds") ?? 3);
  const ns = (flags.get("ns") ?? "100,1000,5000").split(",").map(Number);
  const budgetMs = Number(flags.get("budget-s") ?? 280) * 1000;
  if (flags.has("window")) windowOverride = Number(flags.get("window"));
  if (flags.has("baseline")) baselineScript = flags.get("baseline") ?? baselineScript;
  const started = performance.now();
  const results: CaseResult[] = [];
  const failed: string[] = [];
  let roundMs = 0;
  for (let round = 1; round <= rounds; round++) {
    if (round > 1 && performance.now() - started + roundMs > budgetMs) {
      console.error(`stopping after ${round - 1} round(s): another would exceed the ${budgetMs / 1000} s budget`);
      break;
    }
    const roundStart = performance.now();
    for (const n of ns) {
      const order: ServerKind[] = round % 2 === 1 ? ["baseline", "spar"] : ["spar", "baseline"];
      for (const kind of order) {
        try {
          const result = await runCase(kind, n, round);
          results.push(result);
          console.error(describe(result));
        } catch (error) {
          // One broken case (e.g. the server failed to start) must not lose the other results.
          const message = error instanceof Error ? error.message : String(error);
          failed.push(`round ${round} ${kind} N=${n}: ${message.split("\n").slice(0, 12).join("\n    ")}`);
          console.error(`[round ${round}] ${kind} N=${n} FAILED: ${message}`);
        }
      }
    }
    roundMs = performance.now() - roundStart;
  }
  report(results, ns);
  if (failed.length) console.log(`\nFailed cases (${failed.length}):\n${failed.map((line) => `  ${line}`).join("\n")}`);
  if (flags.has("json")) await Bun.write(flags.get("json") ?? "sse-fanout.json", JSON.stringify(results, null, 2));
}

function report(results: CaseResult[], ns: number[]): void {
  const pick = (kind: ServerKind, n: number) => results.filter((result) => result.server === kind && result.n === n);
  const med = (cases: CaseResult[], f: (result: CaseResult) => number) => median(cases.map(f));
  const roundsDone = new Set(results.map((result) => result.round)).size;
  const rows: string[][] = [];
  const ratios: string[][] = [];
  for (const n of ns) {
    const config = configFor(n);
    for (const kind of ["baseline", "spar"] as const) {
      const cases = pick(kind, n);
      if (cases.length === 0) continue;
      rows.push([
        String(n),
        kind,
        fmt(med(cases, (c) => c.paced.evPerSec)),
        `${fmt(med(cases, (c) => c.paced.p50))} / ${fmt(med(cases, (c) => c.paced.p99))}`,
        fmt(med(cases, (c) => c.paced.evPerCpuSec)),
        fmt(med(cases, (c) => c.saturated.evPerSec)),
        `${fmt(med(cases, (c) => c.saturated.p50))} / ${fmt(med(cases, (c) => c.saturated.p99))}`,
        fmt(med(cases, (c) => c.saturated.evPerCpuSec)),
        `${fmt(med(cases, (c) => c.saturated.serverCpuPct))} / ${fmt(med(cases, (c) => c.saturated.clientCpuPct))}`,
        fmt(med(cases, (c) => c.kibPerSub)),
        String(cases.reduce((sum, c) => sum + c.paced.closed + c.saturated.closed + (c.n - c.connected), 0)),
        String(
          cases.reduce(
            (sum, c) => sum + c.paced.seqGaps + c.saturated.seqGaps + c.paced.undelivered + c.saturated.undelivered,
            0,
          ),
        ),
      ]);
    }
    const base = pick("baseline", n);
    const spar = pick("spar", n);
    if (base.length && spar.length) {
      const ratio = (f: (result: CaseResult) => number) => med(spar, f) / med(base, f);
      ratios.push([
        String(n),
        `${fmt(config.pacedRate)} inj/s (${fmt(config.pacedRate * 9 * n)} ev/s offered)`,
        fmt(
          ratio((c) => c.paced.evPerSec),
          2,
        ),
        fmt(
          ratio((c) => c.paced.p99),
          2,
        ),
        fmt(
          ratio((c) => c.saturated.evPerSec),
          2,
        ),
        fmt(
          ratio((c) => c.saturated.p99),
          2,
        ),
        fmt(
          ratio((c) => c.saturated.evPerCpuSec),
          2,
        ),
        fmt(med(spar, (c) => c.kibPerSub)),
      ]);
    }
  }
  console.log(
    `\nSSE fan-out, medians over ${roundsDone} round(s). Latency in ms (publish stamp -> client receive). ev = SSE frames delivered to one subscriber.`,
  );
  console.log(
    "paced = steady inject rate; saturated = closed loop (<= W injects not yet delivered to every subscriber).\n",
  );
  console.log(
    table(
      [
        "N",
        "server",
        "paced ev/s",
        "paced p50/p99",
        "paced ev/CPU-s",
        "sat ev/s",
        "sat p50/p99",
        "sat ev/CPU-s",
        "sat CPU% srv/cli",
        "KiB/sub",
        "closed",
        "gaps+lost",
      ],
      rows,
    ),
  );
  console.log("\nspar / baseline (targets at N=1000: ev/s >= 0.8, p99 <= 2, <= 16 KiB/sub):\n");
  console.log(
    table(
      ["N", "paced load", "paced ev/s", "paced p99", "sat ev/s", "sat p99", "sat ev/CPU-s", "spar KiB/sub"],
      ratios,
    ),
  );
}

await main();
process.exit(0);
