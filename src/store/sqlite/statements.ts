/**
 * Every prepared statement of the sqlite session store, prepared once per connection. Values are
 * always bound, never spliced into SQL. Owns no state beyond the statement handles.
 */
import type { Database, Statement } from "bun:sqlite";
import { MAX_BLOCK_ROWS } from "./migrations.ts";
import type { InboxRow, KeyRow, SessionParams, SessionRow } from "./row-codec.ts";

type Pk = [number];
type AppSid = [string, string];

/**
 * (pk, afterSeq, uptoSeq): every block holding a seq of afterSeq < seq <= uptoSeq. A block
 * holding afterSeq + 1 starts after afterSeq - MAX_BLOCK_ROWS, which bounds the index seek. Also
 * the read-only reader's (read-only-reader.ts).
 */
export const READ_BLOCKS_SQL = `SELECT first_seq, last_seq, body FROM event_blocks WHERE session_pk = ?1 AND first_seq > ?2 - ${MAX_BLOCK_ROWS} AND first_seq <= ?3 AND last_seq > ?2 ORDER BY first_seq`;

/** Every log row, oldest first (the daemon loads them at open, the read-only reader reads them). */
export const LOAD_LOG_SQL = "SELECT id, body FROM log ORDER BY id";

export class Statements {
  /** BEGIN IMMEDIATE / COMMIT prepared once: a group commit is a few statements, so these count. */
  readonly begin: Statement<unknown, []>;
  readonly commit: Statement<unknown, []>;
  readonly sessionPk: Statement<{ pk: number }, AppSid>;
  readonly sessionByKey: Statement<SessionRow, AppSid>;
  readonly listSessions: Statement<SessionRow, []>;
  readonly keysById: Statement<KeyRow, [string]>;
  readonly insertSession: Statement<unknown, SessionParams>;
  readonly deleteSessionRow: Statement<unknown, Pk>;
  readonly touch: Statement<unknown, [string, number]>;
  readonly setTitle: Statement<unknown, [string | null, number]>;
  readonly setAcl: Statement<unknown, [string, string, number]>;
  /** (at, reason, by, pk): changes nothing when the session is aborted already. */
  readonly setAbort: Statement<unknown, [string, string, string, number]>;

  readonly sessionExists: Statement<{ one: number }, Pk>;
  readonly maxSeq: Statement<{ head: number }, Pk>;
  readonly readBlocks: Statement<unknown, [number, number, number]>;
  readonly insertBlock: Statement<unknown, [number, number, number, string]>;
  readonly deleteBlocks: Statement<unknown, Pk>;
  readonly probe: Statement<unknown, []>;

  readonly insertLog: Statement<unknown, [number, string]>;
  readonly loadLog: Statement<unknown, []>;
  readonly trimLog: Statement<unknown, [number]>;

  readonly inboxState: Statement<{ drained: number }, [number, string]>;
  readonly insertInbox: Statement<unknown, [number, string, string, string, number, string | null]>;
  readonly drainInbox: Statement<unknown, [number, string]>;
  readonly pendingInbox: Statement<InboxRow, Pk>;
  readonly awaitingTurn: Statement<KeyRow, []>;
  readonly deleteInbox: Statement<unknown, Pk>;

  readonly claimInterruption: Statement<{ owner: string }, [string, string, string, string, string, string, string]>;
  readonly beginBoot: Statement<unknown, [string, string]>;
  readonly endBoot: Statement<unknown, [string]>;
  readonly uncleanBootsSince: Statement<{ count: number }, [string, string]>;

  /** Tombstone a session from its row (deleted_at, pk), before the row is deleted. */
  readonly tombstone: Statement<unknown, [string, number]>;
  readonly tombstonesById: Statement<{ app: string; owner: string }, [string]>;
  readonly clearTombstone: Statement<unknown, AppSid>;

  constructor(db: Database) {
    this.begin = db.prepare("BEGIN IMMEDIATE");
    this.commit = db.prepare("COMMIT");
    this.sessionPk = db.prepare("SELECT pk FROM sessions WHERE app = ? AND sid = ?");
    this.sessionByKey = db.prepare("SELECT * FROM sessions WHERE app = ? AND sid = ?");
    this.listSessions = db.prepare("SELECT * FROM sessions ORDER BY pk");
    this.keysById = db.prepare("SELECT app, sid FROM sessions WHERE sid = ? ORDER BY app");
    this.insertSession = db.prepare(
      "INSERT INTO sessions (app, sid, owner, viewers, contributors, title, created_at, last_touched_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    );
    this.deleteSessionRow = db.prepare("DELETE FROM sessions WHERE pk = ?");
    // Insert the claim, or take it over when it expired or is already ours; RETURNING yields the
    // holder either way (no row: somebody else holds a live claim).
    this.claimInterruption = db.prepare(
      "INSERT INTO interruption_claims (app, sid, interruption, owner, expires_at) VALUES (?, ?, ?, ?, ?) " +
        "ON CONFLICT (app, sid, interruption) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at " +
        "WHERE interruption_claims.expires_at <= ? OR interruption_claims.owner = ? RETURNING owner",
    );
    this.beginBoot = db.prepare("INSERT INTO daemon_boots (boot_id, started_at) VALUES (?, ?)");
    this.endBoot = db.prepare("UPDATE daemon_boots SET clean = 1 WHERE boot_id = ?");
    this.uncleanBootsSince = db.prepare(
      "SELECT count(*) AS count FROM daemon_boots WHERE clean = 0 AND started_at >= ? AND boot_id != ?",
    );
    this.touch = db.prepare("UPDATE sessions SET last_touched_at = ? WHERE pk = ?");
    this.setTitle = db.prepare("UPDATE sessions SET title = ? WHERE pk = ?");
    this.setAcl = db.prepare("UPDATE sessions SET viewers = ?, contributors = ? WHERE pk = ?");
    this.setAbort = db.prepare(
      "UPDATE sessions SET aborted_at = ?, abort_reason = ?, aborted_by = ? WHERE pk = ? AND aborted_at IS NULL",
    );

    this.sessionExists = db.prepare("SELECT 1 AS one FROM sessions WHERE pk = ?");
    // Blocks never overlap, so the one with the highest first_seq holds the head.
    this.maxSeq = db.prepare(
      "SELECT last_seq AS head FROM event_blocks WHERE session_pk = ? ORDER BY first_seq DESC LIMIT 1",
    );
    this.readBlocks = db.prepare(READ_BLOCKS_SQL);
    this.insertBlock = db.prepare(
      "INSERT INTO event_blocks (session_pk, first_seq, last_seq, body) VALUES (?, ?, ?, ?)",
    );
    this.deleteBlocks = db.prepare("DELETE FROM event_blocks WHERE session_pk = ?");
    this.probe = db.prepare("SELECT 1 FROM log LIMIT 1");

    this.insertLog = db.prepare("INSERT INTO log (id, body) VALUES (?, ?)");
    this.loadLog = db.prepare(LOAD_LOG_SQL);
    this.trimLog = db.prepare("DELETE FROM log WHERE id <= ?");

    this.inboxState = db.prepare("SELECT drained FROM inbox WHERE session_pk = ? AND prompt_id = ?");
    this.insertInbox = db.prepare(
      "INSERT INTO inbox (session_pk, prompt_id, message, queued_at, wake, trace_context) VALUES (?, ?, ?, ?, ?, ?)",
    );
    this.drainInbox = db.prepare("UPDATE inbox SET drained = 1 WHERE session_pk = ? AND prompt_id = ? AND drained = 0");
    this.pendingInbox = db.prepare(
      "SELECT prompt_id, message, queued_at, wake, trace_context FROM inbox WHERE session_pk = ? AND drained = 0 ORDER BY ord",
    );
    this.awaitingTurn = db.prepare(
      "SELECT s.app, s.sid FROM sessions s JOIN (SELECT DISTINCT session_pk FROM inbox WHERE drained = 0 AND wake = 1) w ON w.session_pk = s.pk ORDER BY s.pk",
    );
    this.deleteInbox = db.prepare("DELETE FROM inbox WHERE session_pk = ?");

    this.tombstone = db.prepare(
      "INSERT OR REPLACE INTO tombstones (app, sid, deleted_at, owner) SELECT app, sid, ?, owner FROM sessions WHERE pk = ?",
    );
    this.tombstonesById = db.prepare("SELECT app, owner FROM tombstones WHERE sid = ? ORDER BY app");
    this.clearTombstone = db.prepare("DELETE FROM tombstones WHERE app = ? AND sid = ?");
  }

  finalizeAll(): void {
    for (const value of Object.values(this)) {
      if (value !== null && typeof value === "object" && "finalize" in value) (value as Statement).finalize();
    }
  }
}
