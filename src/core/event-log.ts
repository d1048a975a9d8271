/**
 * EventLog: the durable, per-session, append-only log. Declared here; implemented in store/.
 *
 * Contract every implementation keeps:
 * - `seq` is per session, contiguous from 1, assigned at commit (D12).
 * - `append` resolves only after the rows are committed; appends issued in the same tick may
 *   share one transaction (group commit).
 * - Inbox items named in `drainedPromptIds` are marked drained in the same transaction, so a
 *   message is either still pending or recorded in the log, never both and never neither.
 */
import type { CommittedRow, SessionEvent } from "./events.ts";
import type { SessionKey } from "./session-key.ts";

export interface AppendOptions {
  drainedPromptIds?: readonly string[];
}

export interface EventLog {
  append(session: SessionKey, events: readonly SessionEvent[], options?: AppendOptions): Promise<CommittedRow[]>;
  /** Rows with `afterSeq < seq <= uptoSeq` (no upper bound when omitted), ascending, at most `limit`. */
  read(session: SessionKey, afterSeq: number, limit: number, uptoSeq?: number): Promise<CommittedRow[]>;
  /** Highest committed seq of the session, 0 when it has none. */
  head(session: SessionKey): Promise<number>;
}
