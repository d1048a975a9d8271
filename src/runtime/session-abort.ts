/**
 * SessionAbortMarker: a session's abort, the terminal state (docs/svc-pauses.md#abort). Holds the
 * marker (from the session's row at load, or set by `mark`), writes it durably to the row (never
 * the transcript) and gives the refusal every later turn kind gets. The actor cancels the turn in
 * flight; this unit only says whether the session is aborted.
 */
import { SparError } from "../core/errors.ts";
import type { SessionKey } from "../core/session-key.ts";
import type { SessionAbort, SessionStore } from "../core/session-store.ts";

export interface AbortMarkerDeps {
  store: Pick<SessionStore, "abortSession">;
  now(): Date;
}

/** The refusal of a turn on an aborted session (409). */
export function abortedError(id: string, abort: SessionAbort): SparError {
  return new SparError("conflict", `session ${JSON.stringify(id)} is aborted (${abort.reason})`, {
    aborted_at: abort.at,
  });
}

export class SessionAbortMarker {
  readonly #key: SessionKey;
  readonly #deps: AbortMarkerDeps;
  #marker: SessionAbort | undefined;
  /** Told once the marker is committed (a waiter on a turn that will never run stops waiting). */
  readonly #listeners = new Set<(abort: SessionAbort) => void>();

  constructor(key: SessionKey, marker: SessionAbort | undefined, deps: AbortMarkerDeps) {
    this.#key = key;
    this.#marker = marker;
    this.#deps = deps;
  }

  /** The marker; set from the moment an abort is asked (turns are refused while it commits). */
  get marker(): SessionAbort | undefined {
    return this.#marker;
  }

  /** Call `listener` once an abort is committed; returns the unsubscribe. */
  onAbort(listener: (abort: SessionAbort) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** 409 naming the abort when the session is aborted. */
  refuseIfAborted(): void {
    if (this.#marker) throw abortedError(this.#key.id, this.#marker);
  }

  /**
   * Abort: refuses turns at once, then commits the marker to the session's row. 409 when the
   * session is aborted already; a write that fails releases the marker and rethrows.
   */
  async mark(reason: string, by: string): Promise<SessionAbort> {
    if (this.#marker)
      throw new SparError("conflict", `session ${JSON.stringify(this.#key.id)}: session already aborted`);
    const marker: SessionAbort = { reason, at: this.#deps.now().toISOString(), by };
    this.#marker = marker;
    try {
      await this.#deps.store.abortSession(this.#key, marker);
    } catch (error) {
      if (this.#marker === marker) this.#marker = undefined;
      if (error instanceof SparError) throw error;
      throw new SparError("persistence_failed", `abort not saved, nothing changed: ${String(error)}`);
    }
    for (const listener of [...this.#listeners]) listener(marker);
    return marker;
  }
}
