/**
 * PeerRegistrar: the daemon's own registration with a peer hub (`--attach-peer-register`, D367).
 * At start it registers (`POST {hub}/peers` with its name, endpoint, labels and lease), then
 * renews (`POST /peers/{id}/heartbeat`) at a third of the lease the hub granted; a 404 on a
 * heartbeat (the hub restarted, or the lease lapsed) registers again at once; any other failure
 * (the hub unreachable, a 5xx, a refusal) is retried with a doubling backoff from 1 s to 30 s and
 * logged once per streak, never stopping the daemon. `stop()` (teardown's first step) cancels the
 * loop and deregisters (`DELETE /peers/{id}`) within its deadline (2 s). The hub's URL is the
 * operator's: a plain fetch in a client span carrying the trace context. Timers are unref'd.
 */
import { tracedFetch } from "../telemetry/client-spans.ts";
import { redactUrl } from "../net/redact-url.ts";
import { peerUrl } from "./peer-attach-client.ts";

export interface PeerRegistration {
  name: string;
  endpoint: string;
  labels: Record<string, string>;
  /** The lease asked for; the hub may grant less (its answer says). */
  leaseSec: number;
}

export interface RegistrarLog {
  info(message: string): void;
  warn(message: string): void;
}

export interface PeerRegistrarOptions {
  hub: string;
  bearer: string | undefined;
  registration: PeerRegistration;
  log: RegistrarLog;
  /** First retry delay (default 1 s), doubled per failure up to `maxBackoffMs` (default 30 s). */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** One request's deadline (default 10 s). */
  requestTimeoutMs?: number;
}

/** Retry delay after `failures` failures in a row (1-based): min * 2^(n-1), at most max. */
export function backoffMs(failures: number, minMs: number, maxMs: number): number {
  return Math.min(maxMs, minMs * 2 ** Math.max(0, Math.min(30, failures - 1)));
}

/** When to renew a lease of `ttlSec`: at a third of it, at least 200 ms. */
export function heartbeatDelayMs(ttlSec: number): number {
  return Math.max(200, Math.floor((ttlSec * 1000) / 3));
}

export class PeerRegistrar {
  readonly #options: PeerRegistrarOptions;
  readonly #minBackoff: number;
  readonly #maxBackoff: number;
  #id: string | undefined;
  #ttlSec: number;
  #failures = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #inflight: AbortController | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;

  constructor(options: PeerRegistrarOptions) {
    this.#options = options;
    this.#minBackoff = options.minBackoffMs ?? 1000;
    this.#maxBackoff = options.maxBackoffMs ?? 30_000;
    this.#ttlSec = options.registration.leaseSec;
  }

  /** The registration id the hub gave, while registered. */
  get registrationId(): string | undefined {
    return this.#id;
  }

  start(): void {
    this.#schedule(0);
  }

  /** Stop renewing and deregister within `deadlineMs`; never rejects. */
  async stop(deadlineMs = 2000): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#inflight?.abort();
    // A step in flight ends at once (aborted); one that got its answer first has set the id.
    await this.#running;
    const id = this.#id;
    this.#id = undefined;
    if (id === undefined) return;
    const url = peerUrl(this.#options.hub, `/peers/${encodeURIComponent(id)}`);
    try {
      const response = await tracedFetch(url, {
        method: "DELETE",
        // The attach listener's write guard wants a JSON content type on every write, body or not.
        headers: this.#headers(true),
        signal: AbortSignal.timeout(deadlineMs),
      });
      await response.body?.cancel().catch(() => {});
      if (response.status === 204) this.#options.log.info(`peer hub: deregistered from ${redactUrl(url)}`);
      else this.#options.log.warn(`peer hub: deregistration answered HTTP ${response.status}`);
    } catch (error) {
      this.#options.log.warn(`peer hub: deregistration failed: ${describe(error)}`);
    }
  }

  #headers(json = false): Record<string, string> {
    const bearer = this.#options.bearer;
    return {
      accept: "application/json",
      ...(json ? { "content-type": "application/json" } : {}),
      ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }),
    };
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.#step();
    }, delayMs);
    this.#timer.unref();
  }

  async #step(): Promise<void> {
    const controller = new AbortController();
    this.#inflight = controller;
    const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(this.#options.requestTimeoutMs ?? 10_000)]);
    try {
      const next = this.#id === undefined ? await this.#register(signal) : await this.#heartbeat(this.#id, signal);
      if (next !== undefined) this.#schedule(next);
    } catch (error) {
      if (this.#stopped) return;
      this.#failed(`cannot reach the peer hub ${redactUrl(this.#options.hub)}: ${describe(error)}`);
    } finally {
      if (this.#inflight === controller) this.#inflight = undefined;
    }
  }

  /** A failure: log the first of a streak, retry after the backoff. */
  #failed(message: string): void {
    this.#failures += 1;
    if (this.#failures === 1) this.#options.log.warn(`peer hub: ${message}; retrying with backoff`);
    this.#schedule(backoffMs(this.#failures, this.#minBackoff, this.#maxBackoff));
  }

  #recovered(): void {
    if (this.#failures > 0) this.#options.log.info(`peer hub: reachable again after ${this.#failures} failure(s)`);
    this.#failures = 0;
  }

  /** POST /peers; the delay before the next step (undefined: a retry is already scheduled). */
  async #register(signal: AbortSignal): Promise<number | undefined> {
    const { name, endpoint, labels, leaseSec } = this.#options.registration;
    const response = await tracedFetch(peerUrl(this.#options.hub, "/peers"), {
      method: "POST",
      headers: this.#headers(true),
      body: JSON.stringify({ name, endpoint, labels, heartbeat_ttl_sec: leaseSec }),
      signal,
    });
    const body = (await response.json().catch(() => ({}))) as {
      registration_id?: unknown;
      heartbeat_ttl_sec?: unknown;
      error?: unknown;
    };
    if (response.status !== 201 || typeof body.registration_id !== "string") {
      const why = typeof body.error === "string" ? `: ${body.error.slice(0, 300)}` : "";
      this.#failed(`registering as ${JSON.stringify(name)} answered HTTP ${response.status}${why}`);
      return undefined;
    }
    this.#id = body.registration_id;
    if (typeof body.heartbeat_ttl_sec === "number" && body.heartbeat_ttl_sec > 0) this.#ttlSec = body.heartbeat_ttl_sec;
    this.#recovered();
    this.#options.log.info(`peer hub: registered as ${JSON.stringify(name)} (${endpoint}), lease ${this.#ttlSec}s`);
    return heartbeatDelayMs(this.#ttlSec);
  }

  /** POST /peers/{id}/heartbeat; the delay before the next step (undefined: a retry is already scheduled). */
  async #heartbeat(id: string, signal: AbortSignal): Promise<number | undefined> {
    const response = await tracedFetch(peerUrl(this.#options.hub, `/peers/${encodeURIComponent(id)}/heartbeat`), {
      method: "POST",
      headers: this.#headers(true),
      signal,
    });
    await response.body?.cancel().catch(() => {});
    if (response.status === 404) {
      this.#recovered();
      this.#id = undefined;
      this.#options.log.info("peer hub: the hub no longer knows this registration (restarted?): registering again");
      return 0;
    }
    if (!response.ok) {
      this.#failed(`heartbeat answered HTTP ${response.status}`);
      return undefined;
    }
    this.#recovered();
    return heartbeatDelayMs(this.#ttlSec);
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
