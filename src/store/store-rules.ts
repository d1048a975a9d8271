/**
 * The rules both stores (sqlite and PostgreSQL) and their read-only readers apply alike, with
 * their error texts, so the two engines answer a caller the same way: what an append accepts and
 * the JSON it writes, how a read's bounds are clamped, the refusals of the write rules (not_found,
 * conflict), how an engine's failure reads (a refused write, a failed read or op, a closed store)
 * and a schema this build cannot use. The engines keep only what differs: their SQL, and which of
 * their failures is store-level (sqlite-errors.ts, postgres-errors.ts). Pure: no SQL, no I/O.
 */
import type { AppendOptions } from "../core/event-log.ts";
import type { SessionEvent } from "../core/events.ts";
import { SparError } from "../core/errors.ts";
import { type Result, err, ok } from "../core/result.ts";
import { type SessionKey, sessionKeyString } from "../core/session-key.ts";

// ---- append and read --------------------------------------------------------------------

/** An append that writes: each event's JSON (as stored) and the prompts it drains. */
export interface CheckedAppend {
  payloads: string[];
  drained: readonly string[];
}

/**
 * Checks an append before it is queued: undefined for an empty one (it resolves [] and writes
 * nothing); `bad_request` for drained prompts without events, a prompt id drained twice, or an
 * event that is not JSON-serializable.
 */
export function checkAppend(
  events: readonly SessionEvent[],
  options: AppendOptions | undefined,
): Result<CheckedAppend | undefined, SparError> {
  const drained = options?.drainedPromptIds ?? [];
  if (events.length === 0) {
    if (drained.length > 0)
      return err(new SparError("bad_request", "drainedPromptIds given without events to record them"));
    return ok(undefined);
  }
  if (drained.length > 1 && new Set(drained).size !== drained.length)
    return err(new SparError("bad_request", "drainedPromptIds holds a prompt id twice"));
  const payloads: string[] = new Array(events.length);
  try {
    for (let i = 0; i < events.length; i++) payloads[i] = JSON.stringify(events[i]);
  } catch (error) {
    return err(new SparError("bad_request", `event is not serializable: ${String(error)}`));
  }
  return ok({ payloads, drained });
}

/**
 * The seqs a `read(afterSeq, limit, uptoSeq)` covers, lo < seq <= hi (seqs are integers from 1),
 * at most `limit` of them and none above `ceiling` (the session's head, or the engine's largest
 * seq); undefined when that holds none.
 */
export function readRange(
  afterSeq: number,
  limit: number,
  uptoSeq: number | undefined,
  ceiling: number,
): { lo: number; hi: number } | undefined {
  if (!(limit >= 1)) return undefined;
  const lo = Math.max(0, Math.floor(afterSeq));
  const hi = Math.min(ceiling, Math.floor(uptoSeq ?? ceiling), lo + Math.floor(Math.min(limit, ceiling)));
  return hi > lo ? { lo, hi } : undefined;
}

// ---- the write rules' refusals ----------------------------------------------------------

/** Any write to a session that does not exist (an append, a touch, an enqueue, ...). */
export function sessionNotFound(key: SessionKey): SparError {
  return new SparError("not_found", `session ${sessionKeyString(key)} not found`);
}

/** An append by a daemon that no longer holds the session's lease (D487): another daemon serves it now. */
export function leaseLost(key: SessionKey): SparError {
  return new SparError(
    "unavailable",
    `session ${sessionKeyString(key)}: this daemon no longer holds its lease; another spar daemon serves it now`,
    { lease_lost: true },
  );
}

export function sessionExists(key: SessionKey): SparError {
  return new SparError("conflict", `session ${sessionKeyString(key)} already exists`);
}

/** An append drains a prompt that was never queued, or was drained already. */
export function promptNotPending(promptId: string, key: SessionKey): SparError {
  return new SparError(
    "conflict",
    `prompt ${promptId} is not pending in the inbox of session ${sessionKeyString(key)}`,
  );
}

export function promptQueued(promptId: string, key: SessionKey): SparError {
  return new SparError("conflict", `prompt ${promptId} is already in session ${sessionKeyString(key)}`);
}

/** A session is aborted once; a second abort is refused. */
export function alreadyAborted(key: SessionKey): SparError {
  return new SparError("conflict", `session ${JSON.stringify(key.id)}: session already aborted`);
}

// ---- engine failures --------------------------------------------------------------------

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function storeClosed(where: string): SparError {
  return new SparError("unavailable", `session store ${where} is closed`);
}

/** A read-only reader's read failed (store-level or not: it writes nothing a caller could lose). */
export function readerFailed(where: string, error: unknown): SparError {
  if (error instanceof SparError) return error;
  return new SparError("unavailable", `cannot read session store ${where}: ${errorMessage(error)}`);
}

/** How an engine's failures read; `details` names the engine's own code of one (sqlite_code, sqlstate). */
export interface EngineFailures {
  /** The store as a whole refused a batch (disk full, connection lost, read-only): every op fails. */
  writeRefused(error: unknown): SparError;
  readFailed(error: unknown): SparError;
  /** An op that failed on its own (not a store-level refusal): a bug or unexpected data. */
  opFailed(error: unknown): SparError;
}

export function engineFailures(details: (error: unknown) => Record<string, unknown>): EngineFailures {
  return {
    writeRefused: (error) =>
      new SparError("unavailable", `session store refused the write: ${errorMessage(error)}`, details(error)),
    readFailed: (error) =>
      error instanceof SparError
        ? error
        : new SparError("unavailable", `session store read failed: ${errorMessage(error)}`, details(error)),
    opFailed: (error) =>
      error instanceof SparError
        ? error
        : new SparError("internal", `session store write failed: ${errorMessage(error)}`, details(error)),
  };
}

// ---- schema versions --------------------------------------------------------------------

/**
 * A store whose schema this build cannot use as it is: a newer one (never downgraded; `hint`
 * says what else the operator may do), or, for a `reader` (it never writes), an older one no
 * daemon of this build has migrated yet. Undefined when the store may be used.
 */
export function schemaRefusal(
  where: string,
  found: number,
  supported: number,
  options: { hint?: string; reader?: boolean } = {},
): SparError | undefined {
  const head = `session store ${where} has schema version ${found}`;
  if (found > supported)
    return new SparError(
      "unavailable",
      `${head}, newer than this build's ${supported}; upgrade spar${options.hint ?? ""}`,
    );
  if (found < supported && options.reader === true)
    return new SparError(
      "unavailable",
      `${head}, older than this build's ${supported}; start this build's daemon on it once to migrate it (the reader never writes)`,
    );
  return undefined;
}
