/**
 * Slow-subscriber benchmark (docs/reliability.md#resource-faults: a subscriber that stops reading is
 * closed when its buffer fills; other subscribers' latency is unchanged).
 * Run: `bun bench/slow-subscriber.ts [--rounds=3] [--seconds=12] [--healthy=50] [--stalled=20] [--rate=20]`.
 *
 * Per round, one fresh `spar agent` (echo model, sqlite store, `--subscriber-buffer=256`) and
 * `--healthy` subscribers on the default session's /events, read in this process. Two paced
 * phases of `--seconds` each inject `--rate` prompts/s of 6,000 characters (about 20 KiB of
 * frames per turn per subscriber):
 *  - baseline: the healthy subscribers alone;
 *  - stalled: the same, plus `--stalled` raw TCP subscribers that send the GET (live only: a
 *    cursor past the head), read the boot frames, then stop reading (node:net `pause()`), so
 *    their socket buffers fill with live frames and the daemon has to cut them.
 * Latency is inject POST sent -> that prompt's `turn-complete` frame received, per healthy
 * subscriber. It prints p50/p99/max of both phases, their ratio, healthy frames lost (seq gaps),
 * and how many stalled subscribers the daemon had cut by the end (`spar_sse_subscribers`).
 */
import { type Socket, connect } from "node:net";
import { join } from "node:path";
import {
  BUN,
  REPO_ROOT,
  argFlags,
  benchTempDir,
  fmt,
  median,
  nowMs,
  quantile,
  spawnServer,
  table,
  type Server,
} from "./lib.ts";

const flags = argFlags(process.argv.slice(2));
const ROUNDS = Number(flags.get("rounds") ?? 3);
const SECONDS = Number(flags.get("seconds") ?? 12);
const HEALTHY = Number(flags.get("healthy") ?? 50);
const STALLED = Number(flags.get("stalled") ?? 20);
const RATE = Number(flags.get("rate") ?? 20);
const PROMPT = "x".repeat(6000);

interface Phase {
  latencies: number[];
  injects: number;
  gaps: number;
  healthyClosed: number;
}

/** One healthy subscriber: reads every frame, checks seq contiguity, reports turn-complete prompt ids. */
class Healthy {
  lastSeq = 0;
  gaps = 0;
  closed = false;
  onTurnComplete: (promptId: string) => void = () => {};
  readonly #abort = new AbortController();

  static async open(url: string): Promise<Healthy> {
    const subscriber = new Healthy();
    const response = await fetch(url, { signal: subscriber.#abort.signal });
    if (!response.ok || !response.body) throw new Error(`subscribe: ${response.status}`);
    void subscriber.#read(response.body);
    return subscriber;
  }

  async #read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of body) {
        buffer += decoder.decode(chunk, { stream: true });
        let end = buffer.indexOf("\n\n");
        while (end >= 0) {
          this.#frame(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf("\n\n");
        }
      }
    } catch {
      // aborted at the end of the round
    }
    this.closed = true;
  }

  #frame(text: string): void {
    const id = /^id: (\d+)$/m.exec(text);
    if (id) {
      const seq = Number(id[1]);
      if (this.lastSeq > 0 && seq !== this.lastSeq + 1) this.gaps++;
      this.lastSeq = seq;
    }
    if (text.includes("event: turn-complete")) {
      const promptId = /"prompt_id":"([^"]+)"/.exec(text)?.[1];
      if (promptId) this.onTurnComplete(promptId);
    }
  }

  close(): void {
    this.#abort.abort();
  }
}

/** A subscriber that reads its boot frames and then stops reading. */
async function stalledSubscriber(port: number): Promise<Socket> {
  const socket = connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () => resolve());
    socket.once("error", reject);
  });
  socket.on("error", () => {});
  // Live only (a cursor past the head): the buffer fills with live frames, not with a replay.
  socket.write(
    `GET /sessions/default/events?since=999999999999 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n\r\n`,
  );
  await new Promise<void>((resolve) => {
    let seen = "";
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString();
      if (seen.includes("event: usage-update")) {
        socket.off("data", onData);
        socket.pause();
        resolve();
      }
    };
    socket.on("data", onData);
  });
  return socket;
}

async function gauge(server: Server, name: string): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const match = new RegExp(`^${name} (\\d+)`, "m").exec(text);
  return match ? Number(match[1]) : Number.NaN;
}

async function phase(server: Server, healthy: Healthy[]): Promise<Phase> {
  const sentAt = new Map<string, number>();
  // The frame can beat the POST's answer (which carries the prompt id): match them afterwards.
  const received: Array<{ promptId: string; at: number }> = [];
  const lastPrompt = { id: "" };
  let lastSeen = 0;
  for (const subscriber of healthy) {
    subscriber.onTurnComplete = (promptId) => {
      received.push({ promptId, at: nowMs() });
      if (promptId === lastPrompt.id) lastSeen++;
    };
  }
  const gapsBefore = healthy.reduce((sum, s) => sum + s.gaps, 0);
  const interval = 1000 / RATE;
  const total = Math.round(SECONDS * RATE);
  const start = nowMs();
  const posts: Promise<void>[] = [];
  for (let n = 0; n < total; n++) {
    const due = start + n * interval;
    const wait = due - nowMs();
    if (wait > 0) await Bun.sleep(wait);
    const sent = nowMs();
    posts.push(
      fetch(`${server.baseUrl}/sessions/default/inject`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message: PROMPT }),
      })
        .then((response) => response.json() as Promise<{ prompt_id?: string }>)
        .then((body) => {
          if (body.prompt_id) sentAt.set(body.prompt_id, sent);
          if (n === total - 1 && body.prompt_id) {
            lastPrompt.id = body.prompt_id;
            lastSeen = received.filter((r) => r.promptId === body.prompt_id).length;
          }
        }),
    );
  }
  await Promise.all(posts);
  // Injects that queued during a turn are answered by one turn-complete naming the last prompt;
  // wait until the last prompt's frames arrived everywhere (or 10 s).
  const deadline = nowMs() + 10_000;
  while (lastSeen < healthy.length && nowMs() < deadline) await Bun.sleep(50);
  const latencies: number[] = [];
  for (const { promptId, at } of received) {
    const sent = sentAt.get(promptId);
    if (sent !== undefined) latencies.push(at - sent);
  }
  return {
    latencies: latencies.sort((a, b) => a - b),
    injects: total,
    gaps: healthy.reduce((sum, s) => sum + s.gaps, 0) - gapsBefore,
    healthyClosed: healthy.filter((s) => s.closed).length,
  };
}

interface RoundResult {
  base: Phase;
  stalled: Phase;
  stalledCut: number;
}

async function round(index: number): Promise<RoundResult> {
  const db = join(benchTempDir("spar-bench-slow-"), "sessions.db");
  const server = await spawnServer("spar", [
    BUN,
    join(REPO_ROOT, "src/main.ts"),
    "agent",
    "--attach-listen=127.0.0.1:0",
    `--session-db=${db}`,
    "--subscriber-buffer=256",
  ]);
  const healthy = await Promise.all(
    Array.from({ length: HEALTHY }, () => Healthy.open(`${server.baseUrl}/sessions/default/events`)),
  );
  try {
    const base = await phase(server, healthy);
    const stalledSockets = await Promise.all(Array.from({ length: STALLED }, () => stalledSubscriber(server.port)));
    const stalled = await phase(server, healthy);
    const open = await gauge(server, "spar_sse_subscribers");
    const stalledCut = HEALTHY + STALLED - open;
    for (const socket of stalledSockets) socket.destroy();
    console.error(
      `[round ${index}] baseline p50 ${fmt(quantile(base.latencies, 0.5))} p99 ${fmt(quantile(base.latencies, 0.99))} ms; ` +
        `with ${STALLED} stalled p50 ${fmt(quantile(stalled.latencies, 0.5))} p99 ${fmt(quantile(stalled.latencies, 0.99))} ms; ` +
        `stalled cut ${stalledCut}/${STALLED}, healthy gaps ${base.gaps + stalled.gaps}, healthy closed ${stalled.healthyClosed}`,
    );
    return { base, stalled, stalledCut };
  } finally {
    for (const subscriber of healthy) subscriber.close();
    await server.stop();
  }
}

const results: RoundResult[] = [];
for (let i = 1; i <= ROUNDS; i++) results.push(await round(i));

const stat = (pick: (r: RoundResult) => Phase, q: number) => median(results.map((r) => quantile(pick(r).latencies, q)));
const row = (name: string, pick: (r: RoundResult) => Phase): string[] => [
  name,
  fmt(stat(pick, 0.5)),
  fmt(stat(pick, 0.99)),
  fmt(median(results.map((r) => pick(r).latencies.at(-1) ?? Number.NaN))),
  String(results.reduce((sum, r) => sum + pick(r).gaps, 0)),
  String(results.reduce((sum, r) => sum + pick(r).healthyClosed, 0)),
];
console.log(
  `\nSlow subscribers: ${HEALTHY} healthy subscribers, ${RATE} injects/s of ${PROMPT.length} chars for ${SECONDS} s per phase, --subscriber-buffer=256, medians of ${ROUNDS} round(s). Latency: inject sent -> turn-complete received, ms.\n`,
);
console.log(
  table(
    ["phase", "p50", "p99", "max", "healthy seq gaps", "healthy closed"],
    [row("healthy only", (r) => r.base), row(`+ ${STALLED} stalled`, (r) => r.stalled)],
  ),
);
console.log(
  `\nwith stalled / without: p50 ${fmt(stat((r) => r.stalled, 0.5) / stat((r) => r.base, 0.5))}, p99 ${fmt(stat((r) => r.stalled, 0.99) / stat((r) => r.base, 0.99))}; ` +
    `stalled subscribers cut by the end of the phase: ${results.map((r) => `${r.stalledCut}/${STALLED}`).join(", ")}`,
);
