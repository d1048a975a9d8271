/**
 * SseStream: one server-sent-events response with a bounded buffer, on a Bun direct stream.
 * Frames are written as encoded bytes (encode once, share the bytes across subscribers) to the
 * socket's sink, those of one event-loop tick together in one write; when the client stops
 * reading, each write past the sink's own buffer waits on the socket, and once more than
 * `maxQueued` frames or `maxQueuedBytes` bytes wait the stream is cut, so a slow client costs
 * only itself. Heartbeat comments keep idle streams open through proxies.
 *
 * SseStreamGroup: the open streams of one listener, their heartbeat, their end-of-tick flush and
 * their hang-up. Each listener owns one, so two listeners in one process share no timer, no flush
 * list and no drain.
 */

export const SSE_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
} as const;

export interface SseStreamOptions {
  /** Frames the client may lag behind before the stream is closed. */
  maxQueued: number;
  /** Bytes of frames waiting on the socket past which the stream is cut (large frames). */
  maxQueuedBytes?: number;
  /** Queue depth under which a paced producer (replay) may write again. */
  lowWater: number;
  headers?: Record<string, string>;
  onClose?: (reason: string) => void;
}

const PING = new TextEncoder().encode(": ping\n\n");
/**
 * Written first on a stream that has no frame to send yet: Bun ends the response head only with
 * the first body bytes, so a client of a quiet stream would wait for the first heartbeat.
 */
export const OPENING_COMMENT = new TextEncoder().encode(": open\n\n");
/** Frames a tick may gather for one stream before they are written at once (a replay page). */
const FLUSH_AT = 64;
/** How often a paced writer (replay) rechecks a full queue. */
const WRITABLE_POLL_MS = 5;

/** The open event streams of one listener: its heartbeat, its end-of-tick flush and its hang-up. */
export class SseStreamGroup {
  readonly #open = new Set<SseStream>();
  /** Streams holding frames written this tick; one flush at the end of the tick writes each once. */
  #dirty: SseStream[] = [];
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  readonly #flushDirty = (): void => {
    const streams = this.#dirty;
    this.#dirty = [];
    for (const stream of streams) stream.flush();
  };

  /** A new stream of this group (counted, pinged and hung up with it). */
  open(options: SseStreamOptions): SseStream {
    return new SseStream(options, this);
  }

  /** Start this group's heartbeat (a `: ping` comment to each of its open streams). */
  startHeartbeat(intervalMs: number): void {
    if (this.#heartbeat) return;
    this.#heartbeat = setInterval(() => {
      for (const stream of this.#open) stream.write(PING);
    }, intervalMs);
  }

  stopHeartbeat(): void {
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  /** Hang up every open stream of this group (its listener drains). */
  closeAll(reason: string): void {
    for (const stream of [...this.#open]) stream.close(reason);
  }

  /** Open streams of this group. */
  get size(): number {
    return this.#open.size;
  }

  /** Called by a stream of this group as it opens. */
  track(stream: SseStream): void {
    this.#open.add(stream);
  }

  /** Called by a stream of this group as it closes. */
  untrack(stream: SseStream): void {
    this.#open.delete(stream);
  }

  /** A stream gathered its first frame this tick: flush it at the end of the tick, with the others. */
  flushAtEndOfTick(stream: SseStream): void {
    if (this.#dirty.length === 0) setImmediate(this.#flushDirty);
    this.#dirty.push(stream);
  }
}

/** Each SseStream by its response's body: see `sseStreamOf`. */
const streamsByBody = new WeakMap<ReadableStream<Uint8Array>, SseStream>();

/**
 * The SseStream a response body belongs to, if any: a caller that must learn when the stream
 * ends (the request's server span) listens with `onEnd` instead of re-wrapping the body, which
 * would put a JS read per chunk back on Bun's direct stream.
 */
export function sseStreamOf(body: ReadableStream<Uint8Array>): SseStream | undefined {
  return streamsByBody.get(body);
}

export class SseStream {
  readonly response: Response;
  /** Set once Bun starts sending the body; frames written before wait in `#early`. */
  #direct: ReadableStreamDirectController | undefined;
  #early: Uint8Array[] = [];
  /** Frames handed to the socket that it has not taken yet (the client is behind). */
  #behind = 0;
  /** Their bytes (Bun holds them until the socket takes them). */
  #behindBytes = 0;
  #earlyBytes = 0;
  /** Every byte accepted by `write`, for producers that pace themselves by volume (replay). */
  #bytesWritten = 0;
  /** Paced producers waiting for the socket to take everything (`whenWritable`). */
  #waiters: Array<() => void> | undefined;
  /** Frames written this tick, sent together by `flush` (one sink write instead of one each). */
  #pending: Uint8Array[] = [];
  #closed = false;
  /** Called once as the stream ends, whatever ends it. */
  #endListeners: Array<() => void> | undefined;
  /** Ends the body: resolves the promise `pull` returned. */
  #release: () => void = () => {};
  readonly #options: SseStreamOptions;
  readonly #group: SseStreamGroup;

  /** Open one through its listener's group: `group.open(options)`. */
  constructor(options: SseStreamOptions, group: SseStreamGroup) {
    this.#options = options;
    this.#group = group;
    // A direct stream: Bun hands each write to the response's socket sink, with no JS queue and
    // no JS call per chunk on the way out (the default stream's read loop cost ~3/4 of the
    // daemon's CPU in the saturated fan-out bench).
    const body = new ReadableStream<Uint8Array>({
      type: "direct",
      pull: (controller) => {
        if (this.#closed) {
          controller.close();
          return undefined;
        }
        this.#direct = controller;
        const early = this.#early;
        this.#early = [];
        this.#earlyBytes = 0;
        // Already counted by `write`: handed on to the socket as they are.
        for (const bytes of early) if (!this.#queue(bytes)) return undefined;
        return new Promise<void>((resolve) => {
          this.#release = resolve;
        });
      },
      cancel: () => this.#finish("client disconnected"),
    });
    this.response = new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...options.headers } });
    streamsByBody.set(body, this);
    group.track(this);
  }

  /** Call `listener` once when the stream ends (at once if it has). */
  onEnd(listener: () => void): void {
    if (this.#closed) listener();
    else (this.#endListeners ??= []).push(listener);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Queue depth under which a paced producer may write again. */
  get lowWater(): number {
    return this.#options.lowWater;
  }

  /** Bytes accepted by `write` so far. */
  get bytesWritten(): number {
    return this.#bytesWritten;
  }

  /** Write one encoded frame; false (and the stream closed) when the client fell too far behind. */
  write(bytes: Uint8Array): boolean {
    if (this.#closed) return false;
    this.#bytesWritten += bytes.byteLength;
    return this.#queue(bytes);
  }

  /** Gather a frame for this tick's write, or before the body starts keep it in `#early`. */
  #queue(bytes: Uint8Array): boolean {
    if (this.#closed) return false;
    if (this.#direct === undefined) {
      this.#early.push(bytes);
      this.#earlyBytes += bytes.byteLength;
      return this.#early.length > this.#options.maxQueued || this.#earlyBytes > this.#maxBytes
        ? this.#overflow()
        : true;
    }
    this.#pending.push(bytes);
    if (this.#pending.length === 1) {
      this.#group.flushAtEndOfTick(this);
    } else if (this.#pending.length >= FLUSH_AT) {
      this.flush();
    }
    return !this.#closed;
  }

  /**
   * Hand the frames written this tick to the socket in one write. Under fan-out a turn's frames
   * come in bursts, and one sink write per frame per subscriber was most of the daemon's CPU.
   */
  flush(): void {
    const frames = this.#pending;
    const direct = this.#direct;
    if (frames.length === 0 || this.#closed || direct === undefined) return;
    this.#pending = [];
    const chunk = frames.length === 1 ? (frames[0] as Uint8Array) : Buffer.concat(frames);
    let written: number | Promise<number>;
    try {
      written = direct.write(chunk);
    } catch {
      this.#finish("client disconnected");
      return;
    }
    if (typeof written === "number") return;
    const count = frames.length;
    const size = chunk.byteLength;
    this.#behind += count;
    this.#behindBytes += size;
    const caughtUp = (): void => {
      this.#behind -= count;
      this.#behindBytes -= size;
      if (this.#behind === 0) this.#wakeWaiters();
    };
    written.then(caughtUp, caughtUp);
    if (this.#behind > this.#options.maxQueued || this.#behindBytes > this.#maxBytes) this.#overflow();
  }

  /**
   * Cut the connection and drop what is still queued: a client that fell behind must not keep
   * a socket (and its buffer) open; it reconnects with Last-Event-ID and loses nothing.
   */
  abort(reason: string): void {
    if (this.#closed) return;
    try {
      this.#direct?.close(new Error(reason));
    } catch {
      // already closed
    }
    this.#finish(reason);
  }

  /** Resolves once the client is keeping up (no write waiting on the socket), or the stream closed. */
  async whenWritable(): Promise<void> {
    // A paced producer yields here: send what it wrote now rather than at the end of the tick.
    this.flush();
    // Before Bun starts the body (a moment after the response is returned) there is no socket
    // to wait on: poll. After it, wait for the socket to take the last waiting write.
    while (
      !this.#closed &&
      this.#direct === undefined &&
      (this.#early.length >= this.#options.lowWater || this.#earlyBytes >= this.#lowWaterBytes)
    ) {
      await Bun.sleep(WRITABLE_POLL_MS);
    }
    if (this.#closed || this.#behind === 0) return;
    await new Promise<void>((resolve) => (this.#waiters ??= []).push(resolve));
  }

  close(reason: string): void {
    if (this.#closed) return;
    this.flush();
    if (this.#closed) return;
    try {
      this.#direct?.end();
    } catch {
      // already errored or cancelled by the client
    }
    this.#finish(reason);
  }

  get #maxBytes(): number {
    return this.#options.maxQueuedBytes ?? Number.POSITIVE_INFINITY;
  }

  /** Bytes gathered before the body starts under which a paced producer may write again. */
  get #lowWaterBytes(): number {
    return Math.min(256 * 1024, this.#maxBytes / 4);
  }

  #wakeWaiters(): void {
    const waiters = this.#waiters;
    this.#waiters = undefined;
    for (const wake of waiters ?? []) wake();
  }

  #overflow(): false {
    this.abort("subscriber buffer overflow");
    return false;
  }

  #finish(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#early = [];
    this.#pending = [];
    this.#group.untrack(this);
    this.#wakeWaiters();
    this.#release();
    this.#options.onClose?.(reason);
    const listeners = this.#endListeners;
    this.#endListeners = undefined;
    for (const listener of listeners ?? []) listener();
  }
}
