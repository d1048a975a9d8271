/**
 * Soak (docs/reliability.md#soak): S sessions turning (echo, paced) with N SSE subscribers for M minutes.
 * Reports daemon RSS and the messages cached in turn workers over time (flat after warm-up?), frames and rows delivered, rows lost or
 * duplicated (by seq, per subscriber), streams that ended, failed injects and daemon log errors.
 *
 * Every prompt is --prompt-chars long and the echo model runs with a --context-window token
 * window, so each session's conversation reaches it early and is then kept under it by automatic
 * compaction (D155): what a session holds is bounded, and RSS must be flat once every session
 * has compacted.
 *
 * Run: bun bench/soak.ts [--minutes=10] [--sessions=100] [--subscribers=1000] [--turns-per-s=100]
 *      [--prompt-chars=200] [--context-window=2000]
 */
import { BUN, REPO_ROOT, argFlags, benchTempDir, fmt, rssKiB, spawnServer, table, track } from "./lib.ts";
import { join } from "node:path";

interface Report {
  frames: number;
  rows: number;
  gaps: number;
  duplicates: number;
  ended: number;
}

const flags = argFlags(process.argv.slice(2));
const minutes = Number(flags.get("minutes") ?? 10);
const sessions = Number(flags.get("sessions") ?? 100);
const subscribers = Number(flags.get("subscribers") ?? 1000);
const turnsPerSecond = Number(flags.get("turns-per-s") ?? 100);
const promptChars = Number(flags.get("prompt-chars") ?? 200);
const contextWindow = Number(flags.get("context-window") ?? 2000);
const clients = 4;

const daemon = await spawnServer("spar", [
  BUN,
  join(REPO_ROOT, "src/main.ts"),
  "agent",
  "--attach-listen=127.0.0.1:0",
  `--session-db=${join(benchTempDir(), "soak.db")}`,
  "--multi-session",
  `--model-context-window=${contextWindow}`,
]);
const ids = Array.from({ length: sessions }, (_, i) => `soak-${i}`);
for (const id of ids) {
  const response = await fetch(`${daemon.baseUrl}/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ sessionID: id }),
  });
  if (response.status !== 201) throw new Error(`create ${id}: ${response.status}`);
}

const children = Array.from({ length: clients }, () => {
  const child = Bun.spawn([BUN, join(import.meta.dir, "soak-client.ts")], {
    ipc: (message) => onMessage(child.pid, message as { type: string } & Partial<Report>),
    stdio: ["ignore", "inherit", "inherit"],
  });
  track(child);
  return child;
});
const waiting = new Map<number, (value: unknown) => void>();
function onMessage(pid: number, message: { type: string } & Partial<Report>): void {
  waiting.get(pid)?.(message);
}
function ask(child: (typeof children)[number], request: unknown): Promise<unknown> {
  return new Promise((resolve) => {
    waiting.set(child.pid, resolve);
    child.send(request);
  });
}
await Bun.sleep(300);
const perSession = Math.max(1, Math.round(subscribers / sessions));
await Promise.all(
  children.map((child, index) =>
    ask(child, {
      type: "connect",
      port: daemon.port,
      sessions: ids.filter((_, i) => i % clients === index),
      perSession,
    }),
  ),
);
console.error(
  `soak: ${sessions} sessions, ${sessions * perSession} subscribers, ${turnsPerSecond} turns/s offered, ${minutes} min, ${promptChars}-char prompts, ${contextWindow}-token window`,
);

/** `spar_worker_cached_messages` from /metrics: the conversation messages the turn workers hold. */
async function cachedMessages(): Promise<number> {
  const text = await (await fetch(`${daemon.baseUrl}/metrics`)).text();
  return Number(/^spar_worker_cached_messages (\d+)$/m.exec(text)?.[1] ?? Number.NaN);
}

function prompt(index: number): string {
  const head = `soak ${index}: `;
  return (
    head +
    "check the rollout and report ".repeat(Math.ceil(promptChars / 29)).slice(0, Math.max(0, promptChars - head.length))
  );
}

/** Compactions so far, summed over the sessions' GET /context. */
async function compactions(): Promise<number> {
  const counts = await Promise.all(
    ids.map(
      async (id) =>
        ((await (await fetch(`${daemon.baseUrl}/sessions/${id}/context`)).json()) as { compactions: number })
          .compactions,
    ),
  );
  return counts.reduce((sum, count) => sum + count, 0);
}

const samples: string[][] = [];
let injects = 0;
let failedInjects = 0;
const started = performance.now();
const deadline = started + minutes * 60_000;
let nextSample = started;
let turnIndex = 0;
while (performance.now() < deadline) {
  const id = ids[turnIndex++ % ids.length] ?? "soak-0";
  fetch(`${daemon.baseUrl}/sessions/${id}/inject`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message: prompt(turnIndex) }),
  })
    .then((response) => (response.status === 200 ? injects++ : failedInjects++))
    .catch(() => failedInjects++);
  if (performance.now() >= nextSample) {
    samples.push([
      ((performance.now() - started) / 60_000).toFixed(1),
      fmt(rssKiB(daemon.pid) / 1024),
      String(await cachedMessages()),
      String(await compactions()),
      String(injects),
      String(failedInjects),
    ]);
    nextSample += 30_000;
  }
  await Bun.sleep(1000 / turnsPerSecond);
}
await Bun.sleep(3000);
const reports = (await Promise.all(children.map((child) => ask(child, { type: "report" })))) as Report[];
const total = reports.reduce(
  (sum, report) => ({
    frames: sum.frames + report.frames,
    rows: sum.rows + report.rows,
    gaps: sum.gaps + report.gaps,
    duplicates: sum.duplicates + report.duplicates,
    ended: sum.ended + report.ended,
  }),
  { frames: 0, rows: 0, gaps: 0, duplicates: 0, ended: 0 },
);
samples.push([
  minutes.toFixed(1),
  fmt(rssKiB(daemon.pid) / 1024),
  String(await cachedMessages()),
  String(await compactions()),
  String(injects),
  String(failedInjects),
]);
const errors = daemon
  .log()
  .split("\n")
  .filter((line) => / (ERROR|WARN) /.test(line) && !line.includes("has no token"));
for (const child of children) child.send({ type: "close" });
await daemon.stop();

console.log(
  table(
    ["minute", "daemon RSS MiB", "messages cached in turn workers", "compactions", "injects ok", "injects failed"],
    samples,
  ),
);
console.log();
console.log(
  table(
    [
      "frames delivered",
      "rows delivered",
      "rows lost (gaps)",
      "rows duplicated",
      "streams ended early",
      "daemon log errors",
    ],
    [
      [
        String(total.frames),
        String(total.rows),
        String(total.gaps),
        String(total.duplicates),
        String(total.ended),
        String(errors.length),
      ],
    ],
  ),
);
for (const line of errors.slice(0, 5)) console.log(`  ${line}`);
process.exit(0);
