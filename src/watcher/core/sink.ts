/**
 * The sink contract: where incidents go. `open` starts an incident (a daemon session, a webhook
 * incident) with its first payload; `append` adds a follow-up to one. Every call is attempted once;
 * failures are returned, never retried here. Interface only; implementations in src/watcher/sinks.
 */

/** An open that created the incident but failed to deliver the payload still carries its id. */
export type OpenResult = { id: string; error?: string } | { id?: undefined; error: string };

export type AppendResult = { ok: true } | { ok: false; error: string };

export interface IncidentSink {
  readonly name: string;
  open(payload: object): Promise<OpenResult>;
  append(id: string, payload: object): Promise<AppendResult>;
}
