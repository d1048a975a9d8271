/**
 * SSE fan-out load client, run as a Bun subprocess by bench/sse-fanout.ts (IPC channel), so its
 * parsing CPU never shares the server's event loop. Opens N raw TCP sockets (Bun.connect), each
 * sending one HTTP/1.1 GET, and parses the response incrementally: headers, chunked transfer
 * coding, then SSE frames split on blank lines. Per frame it counts, checks `id:` contiguity,
 * and for frames carrying `t=<ms>` stamps (agent rows, text-delta) records receive - send
 * latency on the shared clock (performance.timeOrigin + performance.now()).
 *
 * IPC in:  connect {host, port, path, n} | reset | count | collect | close
 * IPC out: ready {...} | done {t} (every live subscriber has the model row carrying stamp t) | stats {...}
 */

type Command =
  | { type: "connect"; host: string; port: number; path: string; n: number }
  | { type: "reset" }
  | { type: "collect" }
  | { type: "count" }
  | { type: "close" };

const HEAD = 0;
const SIZE = 1;
const DATA = 2;
const CRLF = 3;
const RAW = 4;
const END = 5;

interface Sub {
  state: number;
  /** Partial header block or partial chunk-size line. */
  pending: string;
  remaining: number;
  skip: number;
  sse: string;
  status: number;
  frames: number;
  lastSeq: number;
  seqGaps: number;
  closed: boolean;
  ready: boolean;
  socket: { end(): void } | undefined;
}

const send = (message: unknown) => process.send?.(message);

const subs: Sub[] = [];
let live = 0;
let closedDuringRun = 0;
let errors: string[] = [];
let framesTotal = 0;
let stampedFrames = 0;
let firstRecv = Number.NaN;
let lastRecv = Number.NaN;
let latencies = new Float64Array(1 << 20);
let latencyCount = 0;
let latencySeen = 0;
const MAX_SAMPLES = 4_000_000;
/** Stamp -> live subscribers that have the model row carrying it. */
let modelRowCounts = new Map<string, number>();
let recvNow = 0;

function addLatency(value: number): void {
  latencySeen++;
  if (latencyCount === latencies.length) {
    if (latencies.length >= MAX_SAMPLES) {
      // Reservoir sampling keeps the distribution once the buffer is full.
      const slot = Math.floor(Math.random() * latencySeen);
      if (slot < latencies.length) latencies[slot] = value;
      return;
    }
    const grown = new Float64Array(latencies.length * 2);
    grown.set(latencies);
    latencies = grown;
  }
  latencies[latencyCount++] = value;
}

function onFrame(sub: Sub, buf: string, start: number, end: number): void {
  if (buf.charCodeAt(start) === 58 /* ':' comment (heartbeat) */) return;
  sub.frames++;
  framesTotal++;
  if (buf.startsWith("id: ", start)) {
    const nl = buf.indexOf("\n", start);
    const seq = Number(buf.slice(start + 4, nl));
    if (sub.lastSeq >= 0 && seq !== sub.lastSeq + 1) sub.seqGaps++;
    sub.lastSeq = seq;
  }
  let p = buf.indexOf("t=", start);
  if (p < 0 || p >= end) return;
  stampedFrames++;
  const isModelRow = buf.indexOf('"role":"model"', start);
  const modelRow = isModelRow >= 0 && isModelRow < end;
  while (p >= 0 && p < end) {
    let q = p + 2;
    for (;;) {
      const c = buf.charCodeAt(q);
      if ((c >= 48 && c <= 57) || c === 46) q++;
      else break;
    }
    if (q > p + 2) {
      const stamp = buf.slice(p + 2, q);
      addLatency(recvNow - Number(stamp));
      if (modelRow) {
        const count = (modelRowCounts.get(stamp) ?? 0) + 1;
        if (count >= live) {
          modelRowCounts.delete(stamp);
          send({ type: "done", t: stamp });
        } else modelRowCounts.set(stamp, count);
      }
    }
    p = buf.indexOf("t=", q);
  }
}

function sseText(sub: Sub, text: string): void {
  const buf = sub.sse.length === 0 ? text : sub.sse + text;
  let start = 0;
  for (;;) {
    const end = buf.indexOf("\n\n", start);
    if (end < 0) break;
    onFrame(sub, buf, start, end);
    start = end + 2;
  }
  sub.sse = start === 0 ? buf : buf.slice(start);
}

function feed(sub: Sub, input: string): void {
  let s = input;
  let i = 0;
  while (i < s.length) {
    switch (sub.state) {
      case HEAD: {
        sub.pending += i === 0 ? s : s.slice(i);
        const end = sub.pending.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = sub.pending.slice(0, end);
        s = sub.pending.slice(end + 4);
        i = 0;
        sub.pending = "";
        sub.status = Number(head.slice(9, 12));
        sub.state = /\r\ntransfer-encoding:\s*chunked/i.test(head) ? SIZE : RAW;
        if (sub.status !== 200) errors.push(`HTTP ${sub.status}: ${head.split("\r\n")[0]}`);
        break;
      }
      case RAW:
        sseText(sub, i === 0 ? s : s.slice(i));
        return;
      case SIZE: {
        if (sub.pending.length > 0) {
          s = sub.pending + s.slice(i);
          i = 0;
          sub.pending = "";
        }
        const nl = s.indexOf("\r\n", i);
        if (nl < 0) {
          sub.pending = s.slice(i);
          return;
        }
        const size = Number.parseInt(s.slice(i, nl), 16);
        i = nl + 2;
        if (size === 0 || Number.isNaN(size)) {
          sub.state = END;
          return;
        }
        sub.remaining = size;
        sub.state = DATA;
        break;
      }
      case DATA: {
        const take = Math.min(sub.remaining, s.length - i);
        sseText(sub, s.slice(i, i + take));
        i += take;
        sub.remaining -= take;
        if (sub.remaining === 0) {
          sub.state = CRLF;
          sub.skip = 2;
        }
        break;
      }
      case CRLF: {
        const take = Math.min(sub.skip, s.length - i);
        i += take;
        sub.skip -= take;
        if (sub.skip === 0) sub.state = SIZE;
        break;
      }
      default:
        return;
    }
  }
}

let readyWaiters: Array<() => void> = [];

function markReady(sub: Sub): void {
  if (sub.ready || sub.frames < 3) return;
  sub.ready = true;
  live++;
  const waiters = readyWaiters;
  readyWaiters = [];
  for (const wake of waiters) wake();
}

function onClosed(sub: Sub, why: string): void {
  if (sub.closed) return;
  sub.closed = true;
  if (sub.ready) {
    live--;
    closedDuringRun++;
    if (errors.length < 20) errors.push(`subscriber closed: ${why} after ${sub.frames} frames`);
    // Stamps waiting on this subscriber may now be complete.
    for (const [stamp, count] of modelRowCounts) {
      if (count >= live) {
        modelRowCounts.delete(stamp);
        send({ type: "done", t: stamp });
      }
    }
  } else if (errors.length < 20) errors.push(`subscriber failed before ready: ${why}`);
  const waiters = readyWaiters;
  readyWaiters = [];
  for (const wake of waiters) wake();
}

function openOne(host: string, port: number, path: string): Promise<void> {
  const sub: Sub = {
    state: HEAD,
    pending: "",
    remaining: 0,
    skip: 0,
    sse: "",
    status: 0,
    frames: 0,
    lastSeq: -1,
    seqGaps: 0,
    closed: false,
    ready: false,
    socket: undefined,
  };
  subs.push(sub);
  const request = `GET ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\nAccept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n`;
  const settled = new Promise<void>((resolve) => {
    const check = () => {
      if (sub.ready || sub.closed) resolve();
      else readyWaiters.push(check);
    };
    readyWaiters.push(check);
  });
  Bun.connect<Sub>({
    hostname: host,
    port,
    data: sub,
    socket: {
      open(socket) {
        socket.data.socket = socket;
        socket.write(request);
      },
      data(socket, chunk) {
        recvNow = performance.timeOrigin + performance.now();
        if (Number.isNaN(firstRecv)) firstRecv = recvNow;
        lastRecv = recvNow;
        const s = socket.data;
        feed(s, chunk.toString("latin1"));
        if (!s.ready) markReady(s);
      },
      close(socket) {
        onClosed(socket.data, "closed by server");
      },
      end(socket) {
        onClosed(socket.data, "server ended the stream");
        socket.end();
      },
      error(socket, error) {
        onClosed(socket.data, `error ${error.message}`);
      },
      connectError(socket, error) {
        onClosed(socket.data, `connect error ${error.message}`);
      },
    },
  }).catch((error: unknown) => onClosed(sub, `connect failed ${String(error)}`));
  return settled;
}

async function connectAll(host: string, port: number, path: string, n: number): Promise<void> {
  const started = performance.now();
  const BATCH = 100;
  for (let i = 0; i < n; i += BATCH) {
    const batch: Promise<void>[] = [];
    for (let j = i; j < Math.min(n, i + BATCH); j++) batch.push(openOne(host, port, path));
    await Promise.race([Promise.all(batch), Bun.sleep(15_000)]);
  }
  send({
    type: "ready",
    live,
    failed: subs.filter((sub) => !sub.ready).length,
    connectMs: performance.now() - started,
    errors: errors.slice(0, 5),
  });
  resetCounters();
}

function resetCounters(): void {
  framesTotal = 0;
  stampedFrames = 0;
  firstRecv = Number.NaN;
  lastRecv = Number.NaN;
  latencyCount = 0;
  latencySeen = 0;
  closedDuringRun = 0;
  modelRowCounts = new Map();
  errors = [];
  for (const sub of subs) sub.frames = 0;
}

const cpu0 = process.cpuUsage();
let cpuMark = cpu0;
let wallMark = performance.now();

function collect(): void {
  const sorted = latencies.subarray(0, latencyCount).slice().sort();
  const perSub = subs.filter((sub) => sub.ready).map((sub) => sub.frames);
  const cpu = process.cpuUsage(cpuMark);
  const wall = performance.now() - wallMark;
  send({
    type: "stats",
    frames: framesTotal,
    stampedFrames,
    firstRecv,
    lastRecv,
    latencySamples: latencySeen,
    p50: sorted.length ? sorted[Math.ceil(0.5 * sorted.length) - 1] : Number.NaN,
    p99: sorted.length ? sorted[Math.ceil(0.99 * sorted.length) - 1] : Number.NaN,
    max: sorted.length ? sorted[sorted.length - 1] : Number.NaN,
    live,
    closed: closedDuringRun,
    minFrames: perSub.length ? Math.min(...perSub) : 0,
    maxFrames: perSub.length ? Math.max(...perSub) : 0,
    seqGaps: subs.reduce((sum, sub) => sum + sub.seqGaps, 0),
    errors: errors.slice(0, 5),
    clientCpuPct: ((cpu.user + cpu.system) / 1000 / wall) * 100,
  });
}

process.on("message", (message: Command) => {
  switch (message.type) {
    case "connect":
      void connectAll(message.host, message.port, message.path, message.n);
      break;
    case "reset":
      resetCounters();
      cpuMark = process.cpuUsage();
      wallMark = performance.now();
      break;
    case "collect":
      collect();
      break;
    case "count":
      send({ type: "count", frames: framesTotal, live });
      break;
    case "close":
      for (const sub of subs) sub.socket?.end();
      setTimeout(() => process.exit(0), 50);
      break;
  }
});

// Exit with the parent: if the IPC channel goes away, nothing else will stop us.
process.on("disconnect", () => process.exit(0));
setTimeout(() => process.exit(2), 15 * 60_000).unref();
send({ type: "hello" });
