/**
 * StoreReader: a read-only view of a session store for tools that run beside a daemon (the
 * operator CLI's `list`, `show` and `export-decisions`). It takes no lock and never writes, so it
 * works on a store no daemon holds and on one a daemon is serving. Declared here; implemented in
 * store/ (sqlite: a read-only connection; postgres: read-only transactions).
 */
import type { CommittedRow } from "./events.ts";
import type { SessionKey } from "./session-key.ts";
import type { SessionRecord } from "./session-store.ts";

export interface StoreReader {
  /** The store as messages name it: the file path, or the URL with its credentials as `***`. */
  readonly source: string;
  /** Every session row, oldest first. */
  listSessions(): Promise<SessionRecord[]>;
  /** Every committed row of each session asked (in the order asked), read in one consistent view. */
  readRows(sessions: readonly SessionKey[]): Promise<CommittedRow[][]>;
  close(): Promise<void>;
}
