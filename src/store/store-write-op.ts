/**
 * The write vocabulary both stores' writer queues carry (sqlite's and PostgreSQL's): one op per
 * Store write, with the promise it settles and what the transaction found. Types only.
 */
import type { SessionEvent } from "../core/events.ts";
import type { SparError } from "../core/errors.ts";
import type { InboxItem, InterruptionClaim, SessionAbort, SessionRecord } from "../core/session-store.ts";
import type { SessionKey } from "../core/session-key.ts";

interface PendingOp {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /** Set inside the transaction; reported only if it commits. */
  result: unknown;
  error: SparError | undefined;
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
