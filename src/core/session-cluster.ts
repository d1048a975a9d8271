/**
 * SessionCluster: what several daemons sharing one database need of their store (D487). Each
 * session's turns run on exactly one daemon at a time, the holder of its lease (a row with an
 * expiry on the database's clock, renewed by its holder and taken over once it lapses); a daemon
 * that is not the holder commits a command for the holder and waits for its result; committed
 * rows, commands and results are announced to every daemon (the log and the command rows are the
 * truth, an announcement only a wake-up). Declared here; implemented by the postgres store.
 */
import type { SessionKey } from "./session-key.ts";

/** The outcome of asking for a session's lease: held by us now, or by `holder` ('' when the session is gone). */
export interface LeaseOutcome {
  held: boolean;
  holder: string;
}

/** A command another daemon committed for a session's holder, not yet answered. */
export interface PendingCommand {
  id: number;
  op: string;
  /** JSON text of the op's arguments. */
  args: string;
}

/** What the cluster announces; each handler runs on the daemon's main thread. */
export interface ClusterSignals {
  /** A session's log grew to `head` (committed by any daemon). */
  rows(key: SessionKey, head: number): void;
  /** A command was committed for the session's holder; the command itself when the announcement carries it. */
  command(key: SessionKey, inline?: PendingCommand): void;
  /** A command was answered; the answer itself when the announcement carries it. */
  result(id: number, inline?: string): void;
  /** The announcements' connection was (re)established: anything announced meanwhile was missed. */
  connected(): void;
}

export interface SessionCluster {
  /** This daemon run's name in lease and command rows. */
  readonly daemonId: string;
  /**
   * Hold this run's liveness mark (again, when its connection died): while it is held the run counts
   * as alive, and its leases and boot record are not taken for a dead daemon's (D490).
   */
  keepAlive(): Promise<void>;
  /** Take the lease (free, lapsed, or already ours) until now + ttlMs on the database's clock. */
  acquireLease(key: SessionKey, ttlMs: number): Promise<LeaseOutcome>;
  /** Extend every lease this daemon holds; resolves to the sessions it still holds. */
  renewLeases(ttlMs: number): Promise<SessionKey[]>;
  /** Give a lease back: deleted, or (`lapse`) expired at once so another daemon takes the session over. */
  releaseLease(key: SessionKey, lapse: boolean): Promise<void>;
  /** Sessions whose lease lapsed without a release (their holder died): the takeover's candidates. */
  lapsedLeases(limit: number): Promise<SessionKey[]>;
  /** Commit a command for the session's holder; resolves to its id once committed and announced. */
  postCommand(key: SessionKey, op: string, args: string): Promise<number>;
  /** The session's unanswered commands, oldest first. */
  pendingCommands(key: SessionKey): Promise<PendingCommand[]>;
  /** Record a command's result (JSON text) and announce it. */
  completeCommand(id: number, result: string): Promise<void>;
  /** A command's result, undefined while it is unanswered. */
  commandResult(id: number): Promise<string | undefined>;
  /** Delete answers older than an hour (a waiter reads its own well within it). */
  pruneAnswered(): Promise<void>;
  /** Receive the announcements until the returned stop is called. */
  listen(signals: ClusterSignals): Promise<() => Promise<void>>;
}
