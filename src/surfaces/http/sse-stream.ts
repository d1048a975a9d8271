/**
 * SseStream: one server-sent-events response with a bounded buffer. Bytes are enqueued as
 * encoded frames (encode once, share the bytes across subscribers); when the client stops
 * reading and the queue passes its bound the stream is closed, so a slow client costs only
 * itself. Heartbeat comments keep idle streams open through proxies.
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
  /** Queue depth under which a paced producer (replay) may write again. */
  lowWater: number;
  headers?: Record<string, string>;
  onClose?: (reason: string) => void;
}

const PING = new TextEncoder().encode(": ping\n\n");
/** How often a paced writer (replay) rechecks a full queue. */
const WRITABLE_POLL_MS = 5;
const openStreams = new Set<SseStream>();
let heartbeat: ReturnType<typeof setInterval> | undefined;

export class SseStream {
  readonly response: Response;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #closed = false;
  #writes = 0;
  readonly #options: SseStreamOptions;

  constructor(options: SseStreamOptions) {
    this.#options = options;
    const body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#controller = controller;
        },
        // No pull(): Bun would call into JS on every read of the hot fan-out path. The rare
        // paced writer (a replay) polls the queue depth instead (whenWritable).
        cancel: () => this.#finish("client disconnected"),
      },
      new CountQueuingStrategy({ highWaterMark: options.lowWater }),
    );
    this.response = new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...options.headers } });
    openStreams.add(this);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Enqueue one encoded frame; false (and the stream closed) when the client fell too far behind. */
  write(bytes: Uint8Array): boolean {
    if (this.#closed) return false;
    this.#controller.enqueue(bytes);
    // Reading the queue depth costs more than the enqueue: check every 16th frame. The bound
    // is then exceeded by at most 15 frames before the stream is cut.
    if ((++this.#writes & 15) !== 0) return true;
    const queued = this.#options.lowWater - (this.#controller.desiredSize ?? 0);
    if (queued > this.#options.maxQueued) {
      this.abort("subscriber buffer overflow");
      return false;
    }
    return true;
  }

  /**
   * Cut the connection and drop what is still queued: a client that fell behind must not keep
   * a socket (and its buffer) open; it reconnects with Last-Event-ID and loses nothing.
   */
  abort(reason: string): void {
    if (this.#closed) return;
    try {
      this.#controller.error(new Error(reason));
    } catch {
      // already closed
    }
    this.#finish(reason);
  }

  /** Resolves once the queue is under the low-water mark, or the stream closed. */
  async whenWritable(): Promise<void> {
    while (!this.#closed && (this.#controller.desiredSize ?? 0) <= 0) await Bun.sleep(WRITABLE_POLL_MS);
  }

  close(reason: string): void {
    if (this.#closed) return;
    try {
      this.#controller.close();
    } catch {
      // already errored or cancelled by the client
    }
    this.#finish(reason);
  }

  #finish(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    openStreams.delete(this);
    this.#options.onClose?.(reason);
  }
}

/** Start the shared heartbeat (a `: ping` comment to every open stream). */
export function startHeartbeat(intervalMs: number): void {
  if (heartbeat) return;
  heartbeat = setInterval(() => {
    for (const stream of openStreams) stream.write(PING);
  }, intervalMs);
}

export function stopHeartbeat(): void {
  if (heartbeat) clearInterval(heartbeat);
  heartbeat = undefined;
}

/** Hang up every open stream (daemon shutdown). */
export function closeAllStreams(reason: string): void {
  for (const stream of [...openStreams]) stream.close(reason);
}

export function openStreamCount(): number {
  return openStreams.size;
}
