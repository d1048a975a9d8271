/**
 * The sqlite store's event encodings (D150, D152), one codec for the daemon's store (journal.ts
 * writes and loads the `log` table, merge.ts writes `event_blocks`, block-reader.ts reads them)
 * and the operator CLI's read-only reader, which decodes the same rows without the daemon:
 * - a `log` row (one group commit) holds `[[session_pk, first_seq, [event, ...]], ...]`, one
 *   segment per append, each event the JSON the append committed;
 * - an `event_blocks` row holds `[event, ...]`, events first_seq..last_seq of one session.
 * Decoding checks the shape and refuses a row that breaks it (the file is inconsistent), naming
 * the store and the row. Pure: no SQL, no I/O.
 */
import type { CommittedRow, SessionEvent } from "../../core/events.ts";
import { SparError } from "../../core/errors.ts";

/** One append's rows in a log row: [session_pk, first_seq, events]. */
export type LogSegment = [number, number, SessionEvent[]];

/** A segment's text, from the JSON of its events as committed (never parsed again). */
export function encodeSegment(pk: number, firstSeq: number, payloads: readonly string[]): string {
  return `[${pk},${firstSeq},[${payloads.join(",")}]]`;
}

/** A log row's body, from its segments' texts. */
export function encodeLogBody(segments: readonly string[]): string {
  return `[${segments.join(",")}]`;
}

/** An `event_blocks` row's body, from its events' JSON. */
export function encodeBlockBody(payloads: readonly string[]): string {
  return `[${payloads.join(",")}]`;
}

/** The segments of log row `id`; refuses a body that is not a list of [session, seq, events]. */
export function decodeLogBody(body: string, id: number, where: string): LogSegment[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw inconsistent(where, `log row ${id} is not JSON`);
  }
  const ok =
    Array.isArray(parsed) &&
    parsed.every(
      (s: unknown) =>
        Array.isArray(s) &&
        s.length === 3 &&
        Number.isSafeInteger(s[0]) &&
        Number.isSafeInteger(s[1]) &&
        s[1] >= 1 &&
        Array.isArray(s[2]) &&
        s[2].length > 0,
    );
  if (!ok) throw inconsistent(where, `log row ${id} is not a list of [session, seq, events]`);
  return parsed as LogSegment[];
}

/** The events of block first..last of session `pk`; refuses one that does not hold last - first + 1 of them. */
export function decodeBlock(body: string, first: number, last: number, pk: number, where: string): SessionEvent[] {
  let events: unknown;
  try {
    events = JSON.parse(body);
  } catch {
    events = undefined;
  }
  if (!Array.isArray(events) || events.length !== last - first + 1)
    throw inconsistent(where, `block ${first}..${last} of session #${pk}`);
  return events as SessionEvent[];
}

/** A segment's committed rows, seqs from its first. */
export function segmentRows([, firstSeq, events]: LogSegment): CommittedRow[] {
  return events.map((event, i) => ({ seq: firstSeq + i, event }));
}

export function inconsistent(where: string, detail: string): SparError {
  return new SparError("unavailable", `session store ${where} is inconsistent: ${detail}`);
}
