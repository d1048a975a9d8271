/**
 * SessionStore: durable session rows (owner, title, ACL lists), tombstones, and the durable
 * inbox (D13). Declared here; implemented in store/. Every mutating call resolves only after
 * its write is committed.
 */
import type { EventLog } from "./event-log.ts";
import type { SessionKey } from "./session-key.ts";
import type { SessionCluster } from "./session-cluster.ts";

export interface SessionRecord {
  app: string;
  id: string;
  owner: string;
  viewers: string[];
  contributors: string[];
  /** Omitted until the first turn names the session. */
  title?: string;
  createdAt: string;
  /** RFC 3339; the zero value `0001-01-01T00:00:00Z` when never touched. */
  lastTouchedAt: string;
  /** Set once the session is aborted (terminal): no turn of any kind runs on it again. */
  abort?: SessionAbort;
}

/** The durable abort marker of a session, kept with its row (never a transcript row). */
export interface SessionAbort {
  reason: string;
  /** RFC 3339. */
  at: string;
  /** The identity that aborted it. */
  by: string;
}

export interface InboxItem {
  promptId: string;
  message: string;
  queuedAt: string;
  /** false: read by the next turn, starts none. */
  wake: boolean;
  /** The trace context of the request that queued it (tracing on only): its turn's span links back (D301). */
  trace?: PromptTrace;
}

/** A W3C trace context as carried in headers and stored with a prompt (D301). */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

/** A prompt's trace context: the ids, and the W3C `baggage` of the request that queued it (D341). */
export interface PromptTrace extends TraceCarrier {
  baggage?: string;
}

/** A daemon's claim on re-driving one interrupted turn (auto-continue). */
export interface InterruptionClaim {
  /** The interrupted turn's invocation id. */
  interruption: string;
  /** The claiming daemon run (its boot id). */
  owner: string;
  /** RFC 3339 now, and when the claim lapses. */
  now: string;
  expiresAt: string;
}

/** Coordination between daemon runs sharing a store. */
export interface DaemonCoordination {
  /** True when this owner holds the claim now (new, expired and taken over, or already its own). */
  claimInterruption(key: SessionKey, claim: InterruptionClaim): Promise<boolean>;
  /** Record this run's start; resolves to the earlier unclean runs started since `windowStart`. */
  beginBoot(bootId: string, at: string, windowStart: string): Promise<number>;
  /** Mark this run's stop orderly. */
  endBoot(bootId: string): Promise<void>;
}

/** A deleted session's tombstone. */
export interface DeletedSession {
  app: string;
  owner: string;
}

export interface SessionStore {
  /** Fails with SparError `conflict` when the session exists. Clears a tombstone of the same key. */
  createSession(record: SessionRecord): Promise<void>;
  getSession(key: SessionKey): Promise<SessionRecord | undefined>;
  listSessions(): Promise<SessionRecord[]>;
  /** Every app holding a session with this id (shortcut path resolution). */
  findSessionsById(id: string): Promise<SessionKey[]>;
  /** Removes the row, its events and inbox, and leaves a tombstone. False when absent. */
  deleteSession(key: SessionKey): Promise<boolean>;
  /** Tombstones of this id in every app, with the owner the session had ('' when unknown). */
  deletedSessions(id: string): Promise<DeletedSession[]>;
  touchSession(key: SessionKey, at: string): Promise<void>;
  setTitle(key: SessionKey, title: string | undefined): Promise<void>;
  /** Replace the viewer and contributor lists (the owner never changes). */
  setAcl(key: SessionKey, viewers: readonly string[], contributors: readonly string[]): Promise<void>;
  /** Write the abort marker; fails with `conflict` when the session is aborted already, `not_found` when absent. */
  abortSession(key: SessionKey, abort: SessionAbort): Promise<void>;
  enqueueInbox(key: SessionKey, item: InboxItem): Promise<void>;
  /** Undrained inbox items in arrival order. */
  pendingInbox(key: SessionKey): Promise<InboxItem[]>;
  /** Sessions with at least one undrained item whose `wake` is true. */
  sessionsAwaitingTurn(): Promise<SessionKey[]>;
}

/** The embedded store is both, behind one writer, so inbox drains and rows share a transaction. */
export interface Store extends SessionStore, EventLog, DaemonCoordination {
  /** Present when several daemons share the store's database (D487). */
  readonly cluster?: SessionCluster | undefined;
  /** A bounded read against the event-log table (health check). */
  probe(): Promise<void>;
  close(): Promise<void>;
}
