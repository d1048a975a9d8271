/**
 * mTLS listener benchmark (issue 13 item 3): what serving requests through the terminator costs.
 * Run: `bun bench/mtls.ts [--rounds=3] [--seconds=4] [--concurrency=32] [--subscribers=200]
 * [--turns=100] [--before=<dir of an older checkout>]`.
 *
 * Per variant and round, a fresh `spar agent` (echo model) with certificates made by openssl:
 *  - `tls`: Bun.serve terminates TLS itself (no client CA): the ceiling;
 *  - `mtls`: `--attach-client-ca`, this checkout (the in-process handoff);
 *  - `mtls-before`: the same flags on the checkout in `--before` (the loopback splice), if given.
 * Phases:
 *  1. requests: `--concurrency` loops of keep-alive GET /whoami for `--seconds` -> requests/s,
 *     p50/p99 latency, daemon CPU ms per 1,000 requests;
 *  2. fan-out: `--subscribers` event streams on the default session, then `--turns` echo turns
 *     of ~9 frames, each injected once every subscriber has the previous one's turn-complete ->
 *     frames delivered/s to all subscribers, daemon CPU ms per 1,000 frames.
 * The client runs in this process on the same 2 shared cores: compare variants of the same run.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  BUN,
  REPO_ROOT,
  argFlags,
  benchTempDir,
  cpuSeconds,
  fmt,
  median,
  nowMs,
  quantile,
  spawnServer,
  table,
  type Server,
} from "./lib.ts";
import { TestCertificates } from "../test/support/test-certificates.ts";

const flags = argFlags(process.argv.slice(2));
const ROUNDS = Number(flags.get("rounds") ?? 3);
const SECONDS = Number(flags.get("seconds") ?? 4);
const CONCURRENCY = Number(flags.get("concurrency") ?? 32);
const SUBSCRIBERS = Number(flags.get("subscribers") ?? 200);
const TURNS = Number(flags.get("turns") ?? 100);
const BEFORE = flags.get("before");

type Variant = "tls" | "mtls" | "mtls-before";

const certDir = benchTempDir("spar-bench-mtls-");

function makeCertificates(): void {
  new TestCertificates(certDir)
    .ca("ca", "/CN=bench CA")
    .signed("server", "/CN=localhost", "ca", { server: true })
    .signed("client", "/CN=bench", "ca");
}

const pem = (name: string) => readFileSync(join(certDir, name), "utf8");

async function start(variant: Variant): Promise<Server> {
  const main = variant === "mtls-before" ? join(BEFORE ?? "", "src/main.ts") : join(REPO_ROOT, "src/main.ts");
  const tls = [`--attach-tls-cert=${join(certDir, "server.crt")}`, `--attach-tls-key=${join(certDir, "server.key")}`];
  if (variant !== "tls") tls.push(`--attach-client-ca=${join(certDir, "ca.crt")}`);
  const db = join(benchTempDir("spar-bench-mtls-db-"), "sessions.db");
  return spawnServer(variant, [BUN, main, "agent", "--attach-listen=127.0.0.1:0", `--session-db=${db}`, ...tls]);
}

function options(server: Server, init: RequestInit = {}): [string, RequestInit] {
  return [
    `https://127.0.0.1:${server.port}`,
    { ...init, tls: { ca: pem("ca.crt"), cert: pem("client.crt"), key: pem("client.key") } } as RequestInit,
  ];
}

async function requests(server: Server): Promise<{ rate: number; p50: number; p99: number; cpuPerK: number }> {
  const [base, init] = options(server);
  const latencies: number[] = [];
  const cpu0 = cpuSeconds(server.pid);
  const end = nowMs() + SECONDS * 1000;
  const started = nowMs();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (nowMs() < end) {
        const sent = nowMs();
        const response = await fetch(`${base}/whoami`, init);
        await response.arrayBuffer();
        if (!response.ok) throw new Error(`whoami: ${response.status}`);
        latencies.push(nowMs() - sent);
      }
    }),
  );
  const elapsed = (nowMs() - started) / 1000;
  const cpu = cpuSeconds(server.pid) - cpu0;
  latencies.sort((a, b) => a - b);
  return {
    rate: latencies.length / elapsed,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    cpuPerK: (cpu * 1000 * 1000) / latencies.length,
  };
}

/** One subscriber: counts frames and turn-complete frames until aborted. */
function subscribe(
  server: Server,
  abort: AbortController,
  counts: { frames: number; completes: number[] },
  index: number,
): Promise<void> {
  const [base, init] = options(server, { signal: abort.signal });
  return (async () => {
    const response = await fetch(`${base}/sessions/default/events?since=1000000000`, init);
    const reader = response.body?.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let ready: (() => void) | undefined;
    const first = new Promise<void>((resolve) => (ready = resolve));
    void (async () => {
      try {
        for (;;) {
          const chunk = await reader?.read();
          if (!chunk || chunk.done) break;
          buffer += decoder.decode(chunk.value, { stream: true });
          ready?.();
          const end = buffer.lastIndexOf("\n\n");
          if (end < 0) continue;
          const whole = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          counts.frames += whole.split("\n\n").length;
          counts.completes[index] = (counts.completes[index] ?? 0) + (whole.split("event: turn-complete").length - 1);
        }
      } catch {
        // aborted at the end of the phase
      }
    })();
    await first;
  })();
}

async function fanOut(server: Server): Promise<{ framesPerSecond: number; cpuPerK: number }> {
  const abort = new AbortController();
  const counts = { frames: 0, completes: [] as number[] };
  await Promise.all(Array.from({ length: SUBSCRIBERS }, (_, index) => subscribe(server, abort, counts, index)));
  const [base, init] = options(server, { method: "POST", headers: { "content-type": "application/json" } });
  const framesBefore = counts.frames;
  const cpu0 = cpuSeconds(server.pid);
  const started = nowMs();
  const deadline = nowMs() + 120_000;
  for (let turn = 1; turn <= TURNS; turn++) {
    const response = await fetch(`${base}/sessions/default/inject`, {
      ...init,
      body: JSON.stringify({ message: `t=${turn}` }),
    });
    if (!response.ok) throw new Error(`inject: ${response.status}`);
    // One turn at a time (injects during a turn would be bundled into one): wait for every subscriber.
    while (counts.completes.filter((n) => n >= turn).length < SUBSCRIBERS) {
      if (nowMs() > deadline) throw new Error(`turn ${turn} did not reach every subscriber`);
      await Bun.sleep(1);
    }
  }
  const elapsed = (nowMs() - started) / 1000;
  const cpu = cpuSeconds(server.pid) - cpu0;
  const frames = counts.frames - framesBefore;
  abort.abort();
  return { framesPerSecond: frames / elapsed, cpuPerK: (cpu * 1000 * 1000) / frames };
}

makeCertificates();
const variants: Variant[] = ["tls", "mtls", ...(BEFORE ? (["mtls-before"] as const) : [])];
const results = new Map<
  Variant,
  Array<{ rate: number; p50: number; p99: number; cpuPerK: number; framesPerSecond: number; fanCpuPerK: number }>
>();
for (let round = 1; round <= ROUNDS; round++) {
  for (const variant of variants) {
    const server = await start(variant);
    try {
      const request = await requests(server);
      const fan = await fanOut(server);
      console.error(`round ${round} ${variant}: ${fmt(request.rate)} req/s, ${fmt(fan.framesPerSecond)} frames/s`);
      results.set(variant, [
        ...(results.get(variant) ?? []),
        { ...request, framesPerSecond: fan.framesPerSecond, fanCpuPerK: fan.cpuPerK },
      ]);
    } catch (error) {
      console.error(`round ${round} ${variant} failed: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      await server.stop();
    }
  }
}
const rows = variants.map((variant) => {
  const runs = results.get(variant) ?? [];
  const pick = (key: keyof (typeof runs)[number]) => fmt(median(runs.map((run) => run[key])));
  return [
    variant,
    pick("rate"),
    pick("p50"),
    pick("p99"),
    pick("cpuPerK"),
    pick("framesPerSecond"),
    pick("fanCpuPerK"),
  ];
});
console.log(
  `\nmedians of ${ROUNDS} rounds; ${CONCURRENCY} request loops for ${SECONDS} s; ${SUBSCRIBERS} subscribers x ${TURNS} turns\n`,
);
console.log(table(["variant", "req/s", "p50 ms", "p99 ms", "CPU ms/1k req", "frames/s", "CPU ms/1k frames"], rows));
