/**
 * The sink contract: where incidents go. `open` starts an incident (a daemon session, a webhook
 * incident) with its first payload; `append` adds a follow-up to one. A sink makes one attempt per
 * call and describes a failure: `permanent` when retrying cannot help (a 4xx other than 408, 425,
 * 429), `retryAfterMs` when the receiver said when to come back. Retrying, ordering and
 * durability are the delivery queue's (src/watcher/delivery-queue.ts), which implements this same
 * contract and marks what it took over with `queued`. Interface only.
 */
import type { DedupIncident } from "./dedup-cache.ts";

/** Why one attempt failed, and whether another can succeed. */
export interface SinkFailure {
  error: string;
  /** Retrying cannot help (the receiver refused the request itself). */
  permanent?: boolean;
  /** The receiver's Retry-After, in milliseconds. */
  retryAfterMs?: number;
  /** The delivery queue keeps the payload and re-sends it with backoff. */
  queued?: boolean;
}

/** An open that created the incident but failed to deliver the payload still carries its id. */
export type OpenResult = ({ id: string } & Partial<SinkFailure>) | ({ id?: undefined } & SinkFailure);

/** `queued` on success: accepted and held behind earlier payloads of the same incident. */
export type AppendResult = { ok: true; queued?: boolean } | ({ ok: false } & SinkFailure);

/**
 * What an open binds once it succeeds: the dedup key, the incident, and its reason (metrics and
 * log lines). Given to `open`, it lets the delivery queue retry a failed open later and report the
 * session it created.
 */
export interface OpenBinding {
  key: string;
  kind: string;
  reason: string;
  severity: string;
  incident: DedupIncident;
}

export interface IncidentSink {
  readonly name: string;
  /** Shared mode: every payload goes into this one session (an open is an append to it). */
  readonly targetSession?: string | undefined;
  open(payload: object, binding?: OpenBinding): Promise<OpenResult>;
  append(id: string, payload: object): Promise<AppendResult>;
}
