/**
 * The write vocabulary both stores' writer queues carry (sqlite's and PostgreSQL's): one op per
 * Store write, with the promise it settles and what the transaction found, how a write becomes
 * one (`pendingWrite`), the writer's counters both report, and a batch's size for its commit span.
 */
import type { SessionEvent } from "../core/events.ts";
import type { SparError } from "../core/errors.ts";
import type { InboxItem, InterruptionClaim, SessionAbort, SessionRecord } from "../core/session-store.ts";
import type { SessionKey } from "../core/session-key.ts";
import type { SpanContext } from "@opentelemetry/api";
import { writeContext } from "../telemetry/commit-trace.ts";

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

/** What a store supplies for an op of `Op` (a StoreWriteOp, or one with the engine's own fields); `pendingWrite` adds the rest. */
export type WriteFields<Op extends StoreWriteOp> = Op extends StoreWriteOp ? Omit<Op, keyof PendingOp> : never;

/** The op of one write, settled by its commit, with the span it was submitted under (tracing on only). */
export function pendingWrite<T, Op extends StoreWriteOp>(fields: WriteFields<Op>): { op: Op; settled: Promise<T> } {
  const { promise, resolve, reject } = Promise.withResolvers<T>();
  const op = fields as unknown as Op;
  op.resolve = resolve as (value: unknown) => void;
  op.reject = reject;
  op.result = undefined;
  op.error = undefined;
  const trace = writeContext();
  if (trace !== undefined) op.trace = trace;
  return { op, settled: promise };
}

/** A store writer's counters since open, the same names on both engines (the runtime's gauges read these). */
export interface StoreWriteStats {
  /** Write transactions committed. */
  transactions: number;
  /** Ops settled by a committed transaction (succeeded or failed validation). */
  ops: number;
  /** Event rows committed. */
  rows: number;
  /** Batches the writer settled (committed, or refused whole). */
  batches: number;
  /** Most ops in one batch. */
  largestBatch: number;
  /** Batches refused because the store refused the write (every op failed `unavailable`). */
  refused: number;
  /** Longest time one batch took, ms. */
  longestBatchMs: number;
}

/** Every counter at zero, for a writer opening. */
export function zeroWriteStats(): StoreWriteStats {
  return { transactions: 0, ops: 0, rows: 0, batches: 0, largestBatch: 0, refused: 0, longestBatchMs: 0 };
}
