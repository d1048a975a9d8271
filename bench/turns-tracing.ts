/**
 * `bench/turns.ts --tracing`: the cost of tracing on turns (issue 18's benchmark). In one run,
 * per round, the same closed-loop client (S sessions x 1 loop, echo model) drives three daemons
 * one after another, the order rotated each round so the machine's drift spreads over all three:
 *   - tracing off: this build, nothing configured;
 *   - tracing on: this build, always-on sampler (`--sampler=` another, e.g. always_off to price
 *     the SDK and context propagation without recording), exporting every span to a local OTLP sink
 *     (Bun.serve answering 200 to each export and counting its bytes);
 *   - before: the build before tracing (`--before=<checkout>`: a checkout of that commit with its
 *     dependencies installed), nothing configured.
 * Each daemon is warmed first (`--warmup=<s>`, 15 s by default: a daemon runs for days, so its
 * steady state is what counts. With tracing on the JIT compiles 2.6 s more in all (the OTLP
 * serializer's FTL compiles alone take 0.3-0.5 s each, logged with BUN_JSC_reportCompileTimes=1);
 * after 5 s of warm-up it still spent 80 us per measured turn against 25 us with tracing off,
 * after 15 s 17-34 us against 7-12 us), then measured; per daemon it prints its CPU per turn, by
 * thread, and the bench process's own.
 * Reports each round's turns/s, then the medians of the per-round ratios on/off (target >= 0.85)
 * and off/before (target within 3%, i.e. >= 0.97). `SPAR_BENCH_PROFILE=<dir>` profiles each daemon.
 */
import { join } from "node:path";
import {
  BUN,
  benchTempDir,
  cpuSeconds,
  threadCpuSeconds,
  fmt,
  median,
  spawnServer,
  table,
  type Server,
} from "./lib.ts";

export interface LoopRunner {
  setup(server: Server, count: number, prefix: string): Promise<Array<{ url: string; stream: { close(): void } }>>;
  run(
    label: string,
    server: Server,
    sessions: Array<{ url: string; stream: { close(): void } }>,
    seconds: number,
    record?: boolean,
  ): Promise<{ turnsPerSec: number; p99: number; failures: Record<string, number> }>;
}

interface Variant {
  name: "off" | "on" | "before";
  root: string;
  env: Record<string, string>;
}

/** A local OTLP/HTTP sink: 200 to every export, counting requests and bytes. */
function startSink() {
  let requests = 0;
  let bytes = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      requests++;
      bytes += (await request.arrayBuffer()).byteLength;
      return new Response("{}", { headers: { "content-type": "application/json" } });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    stats: () => ({ requests, bytes }),
    stop: () => server.stop(true),
  };
}

async function measure(
  variant: Variant,
  runner: LoopRunner,
  count: number,
  seconds: number,
  warmupSeconds: number,
): Promise<number> {
  const daemon = await spawnServer(
    `spar (${variant.name})`,
    [
      BUN,
      ...(process.env.SPAR_BENCH_PROFILE
        ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${process.env.SPAR_BENCH_PROFILE}/${variant.name}`]
        : []),
      join(variant.root, "src/main.ts"),
      "agent",
      "--attach-listen=127.0.0.1:0",
      `--session-db=${join(benchTempDir("spar-bench-tracing-"), "sessions.db")}`,
      "--multi-session",
    ],
    20_000,
    variant.env,
  );
  try {
    const sessions = await runner.setup(daemon, count, "bench-");
    await runner.run("warm-up", daemon, sessions, warmupSeconds, false);
    const daemonBefore = cpuSeconds(daemon.pid);
    const threadsBefore = threadCpuSeconds(daemon.pid);
    const clientBefore = process.cpuUsage();
    const result = await runner.run(`tracing ${variant.name}`, daemon, sessions, seconds);
    const daemonCpu = cpuSeconds(daemon.pid) - daemonBefore;
    const threads = [...threadCpuSeconds(daemon.pid)]
      .map(([name, total]) => [name, total - (threadsBefore.get(name) ?? 0)] as const)
      .filter(([, used]) => used > 0)
      .sort((a, b) => b[1] - a[1]);
    const clientUsage = process.cpuUsage(clientBefore);
    const turns = result.turnsPerSec * seconds;
    console.error(
      `  ${variant.name}: ${fmt(result.turnsPerSec)} turns/s; daemon ${fmt((daemonCpu * 1e6) / turns)} us CPU/turn (${threads.map(([name, used]) => `${name} ${fmt((used * 1e6) / turns)}`).join(", ")}), bench ${fmt((clientUsage.user + clientUsage.system) / turns)} us CPU/turn`,
    );
    if (Object.keys(result.failures).length > 0)
      console.error(`  ${variant.name}: failures ${JSON.stringify(result.failures)}`);
    for (const session of sessions) session.stream.close();
    return result.turnsPerSec;
  } finally {
    await daemon.stop();
  }
}

export async function tracingComparison(
  runner: LoopRunner,
  options: {
    count: number;
    seconds: number;
    rounds: number;
    warmupSeconds: number;
    before: string | undefined;
    sampler?: string | undefined;
  },
): Promise<void> {
  const sink = startSink();
  const here = join(import.meta.dir, "..");
  const variants: Variant[] = [
    { name: "off", root: here, env: {} },
    {
      name: "on",
      root: here,
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
        OTEL_TRACES_SAMPLER: options.sampler ?? "always_on",
        OTEL_METRICS_EXPORTER: "none",
      },
    },
  ];
  if (options.before !== undefined) variants.push({ name: "before", root: options.before, env: {} });
  const rounds: Array<Record<string, number>> = [];
  try {
    for (let round = 0; round < options.rounds; round++) {
      const rates: Record<string, number> = {};
      const order = variants.map((_, index) => variants[(index + round) % variants.length] as Variant);
      for (const variant of order) {
        console.error(`round ${round + 1}: tracing ${variant.name}`);
        rates[variant.name] = await measure(variant, runner, options.count, options.seconds, options.warmupSeconds);
      }
      rounds.push(rates);
    }
  } finally {
    sink.stop();
  }
  const exported = sink.stats();
  console.log(
    `\nTracing cost: ${options.count} sessions x 1 closed loop, echo model, ${options.seconds} s per daemon per round; tracing on = ${options.sampler ?? "always_on"} sampler exporting to a local OTLP sink (${exported.requests} exports, ${fmt(exported.bytes / 1024 / 1024, 2)} MiB received).\n`,
  );
  const ratio = (rates: Record<string, number>, a: string, b: string) =>
    rates[a] !== undefined && rates[b] !== undefined && rates[b] > 0
      ? (rates[a] as number) / (rates[b] as number)
      : Number.NaN;
  console.log(
    table(
      ["round", "off turns/s", "on turns/s", "before turns/s", "on / off", "off / before"],
      rounds.map((rates, index) => [
        String(index + 1),
        fmt(rates.off ?? Number.NaN),
        fmt(rates.on ?? Number.NaN),
        rates.before === undefined ? "-" : fmt(rates.before),
        fmt(ratio(rates, "on", "off"), 3),
        rates.before === undefined ? "-" : fmt(ratio(rates, "off", "before"), 3),
      ]),
    ),
  );
  const onOff = median(rounds.map((rates) => ratio(rates, "on", "off")));
  console.log(`\nmedian on / off: ${fmt(onOff, 3)} (target >= 0.85)`);
  if (options.before !== undefined) {
    const offBefore = median(rounds.map((rates) => ratio(rates, "off", "before")));
    console.log(`median off / before: ${fmt(offBefore, 3)} (target >= 0.97: within 3% of the build before tracing)`);
  }
}
