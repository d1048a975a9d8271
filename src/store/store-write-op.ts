/**
 * The write vocabulary both stores' writer queues carry (sqlite's and PostgreSQL's): one op per
 * Store write, with the promise it settles and what the transaction found, and a batch's size
 * for its commit span.
 */
import type { SessionEvent } from "../core/events.ts";
import type { SparError } from "../core/errors.ts";
import type { InboxItem, InterruptionClaim, SessionAbort, SessionRecord } from "../core/session-store.ts";
import type { SessionKey } from "../core/session-key.ts";
import type { SpanContext } from "@opentelemetry/api";

interface PendingOp {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /** Set inside the transaction; reported only if it commits. */
  result: unknown;
  error: SparError | undefined;
  /** The span the write was submitted under (tracing on only): its commit's span parent or link (D303). */
  trace?: SpanContext;
}

export type StoreWriteOp = PendingOp &
  (
    | {
        kind: "append";
        key: SessionKey;
        events: readonly SessionEvent[];
        payloads: string[];
        drained: readonly string[];
      }
    | { kind: "create"; record: SessionRecord }
    | { kind: "delete"; key: SessionKey }
    | { kind: "touch"; key: SessionKey; at: string }
    | { kind: "title"; key: SessionKey; title: string | null }
    | { kind: "acl"; key: SessionKey; viewers: readonly string[]; contributors: readonly string[] }
    | { kind: "enqueue"; key: SessionKey; item: InboxItem }
    | { kind: "abort"; key: SessionKey; abort: SessionAbort }
    | { kind: "claim"; key: SessionKey; claim: InterruptionClaim }
    | { kind: "boot-begin"; bootId: string; at: string; windowStart: string }
    | { kind: "boot-end"; bootId: string }
  );

/** What a batch writes: event rows (one per other write) and event payload bytes. */
export function batchSize(batch: readonly StoreWriteOp[]): { rows: number; bytes: number } {
  let rows = 0;
  let bytes = 0;
  for (const op of batch) {
    if (op.kind !== "append") {
      rows++;
      continue;
    }
    rows += op.payloads.length;
    for (const payload of op.payloads) bytes += payload.length;
  }
  return { rows, bytes };
}
