/**
 * StreamAdmission: how many long-lived streams (SSE) a listener holds open, per caller and in
 * all. Every open stream holds a file descriptor for as long as the client likes, so without a
 * cap one read-only viewer can open streams until the process hits its file limit and nothing
 * else (health probes, admins, other tenants) gets a connection. A stream past a cap is refused
 * before it opens with 429, `Retry-After` and a JSON body naming the cap. The global cap sits
 * below the file limit (the headroom serves ordinary requests and probes); admins are exempt from
 * the per-caller cap and may use a small reserve past the global one. Owns counting only: the
 * route decides when to ask and releases on close.
 */
import { SparError } from "../../core/errors.ts";
import type { Caller } from "./caller-auth.ts";

export interface StreamCaps {
  /** Streams open at once, every caller together (admins may use `adminReserve` more). */
  maxStreams: number;
  /** Streams one caller identity may hold open; admins are exempt. */
  maxPerCaller: number;
  /** Streams past `maxStreams` kept for admins. */
  adminReserve: number;
}

export type StreamRefusal = "caller_cap" | "global_cap";

/** Seconds a refused client is asked to wait: streams free up when other clients leave. */
const RETRY_AFTER_SECONDS = 5;

export class StreamAdmission {
  readonly #caps: StreamCaps;
  readonly #byCaller = new Map<string, number>();
  #open = 0;
  readonly #onRefused: (reason: StreamRefusal) => void;

  /** `onRefused` counts each refusal (the metrics registry's counter). */
  constructor(caps: StreamCaps, onRefused: (reason: StreamRefusal) => void = () => {}) {
    this.#caps = caps;
    this.#onRefused = onRefused;
  }

  /** Streams open now. */
  get open(): number {
    return this.#open;
  }

  /** Distinct callers holding at least one stream. */
  get callers(): number {
    return this.#byCaller.size;
  }

  /**
   * Admit one stream for `caller` or throw a 429 problem. The returned release must be called
   * exactly once when the stream closes (a second call does nothing).
   */
  admit(caller: Caller): () => void {
    const ceiling = this.#caps.maxStreams + (caller.admin ? this.#caps.adminReserve : 0);
    if (this.#open >= ceiling) {
      throw this.#refuse(
        "global_cap",
        `this daemon holds its maximum of ${this.#caps.maxStreams} open streams; retry later`,
      );
    }
    const held = this.#byCaller.get(caller.identity) ?? 0;
    if (!caller.admin && held >= this.#caps.maxPerCaller) {
      throw this.#refuse(
        "caller_cap",
        `too many open streams for caller ${caller.identity}: at most ${this.#caps.maxPerCaller} at once; close one first`,
      );
    }
    this.#open++;
    this.#byCaller.set(caller.identity, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#open--;
      const left = (this.#byCaller.get(caller.identity) ?? 1) - 1;
      if (left <= 0) this.#byCaller.delete(caller.identity);
      else this.#byCaller.set(caller.identity, left);
    };
  }

  #refuse(reason: StreamRefusal, message: string): SparError {
    this.#onRefused(reason);
    return new SparError("too_many_requests", message, { retry_after_seconds: RETRY_AFTER_SECONDS });
  }
}

/**
 * The default caps from the process's open-file limit: the global cap leaves a tenth of it (at
 * least 512) for everything else; without a known limit, 4096.
 */
export function defaultStreamCaps(openFileLimit: number | undefined): StreamCaps {
  const maxStreams =
    openFileLimit === undefined || !Number.isFinite(openFileLimit)
      ? 4096
      : Math.max(64, openFileLimit - Math.max(512, Math.floor(openFileLimit / 10)));
  return { maxStreams, maxPerCaller: Math.min(256, maxStreams), adminReserve: 64 };
}
