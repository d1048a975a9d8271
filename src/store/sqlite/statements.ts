/**
 * Every prepared statement of the sqlite session store, prepared once per connection. Values are
 * always bound, never spliced into SQL. Owns no state beyond the statement handles.
 */
import type { Database, Statement } from "bun:sqlite";
import type { InboxRow, KeyRow, SessionParams, SessionRow } from "./row-codec.ts";

type Pk = [number];
/** Journal rows per multi-row insert statement (7 bound values each). */
export const JOURNAL_CHUNK = 16;
const JOURNAL_COLUMNS = "INSERT INTO journal (id, session_pk, seq, ts, author, kind, payload) VALUES ";
type AppSid = [string, string];

export class Statements {
  readonly sessionPk: Statement<{ pk: number }, AppSid>;
  readonly sessionByKey: Statement<SessionRow, AppSid>;
  readonly listSessions: Statement<SessionRow, []>;
  readonly keysById: Statement<KeyRow, [string]>;
  readonly insertSession: Statement<unknown, SessionParams>;
  readonly deleteSessionRow: Statement<unknown, Pk>;
  readonly touch: Statement<unknown, [string, number]>;
  readonly setTitle: Statement<unknown, [string | null, number]>;
  readonly setAcl: Statement<unknown, [string, string, number]>;

  readonly maxSeq: Statement<{ head: number | null }, Pk>;
  readonly readEvents: Statement<unknown, [number, number, number, number]>;
  readonly readPayloads: Statement<unknown, [number, number, number]>;
  readonly deleteEvents: Statement<unknown, Pk>;
  readonly probe: Statement<unknown, []>;

  readonly insertJournal: Statement<unknown, [number, number, number, string, string, string, string]>;
  /** JOURNAL_CHUNK rows: 7 values per row, flat. */
  readonly insertJournalChunk: Statement<unknown, (number | string)[]>;
  readonly deleteJournal: Statement<unknown, Pk>;
  readonly loadJournal: Statement<unknown, []>;
  readonly mergeJournal: Statement<unknown, [number]>;
  readonly trimJournal: Statement<unknown, [number]>;

  readonly inboxState: Statement<{ drained: number }, [number, string]>;
  readonly insertInbox: Statement<unknown, [number, string, string, string, number]>;
  readonly drainInbox: Statement<unknown, [number, string]>;
  readonly pendingInbox: Statement<InboxRow, Pk>;
  readonly awaitingTurn: Statement<KeyRow, []>;
  readonly deleteInbox: Statement<unknown, Pk>;

  readonly claimInterruption: Statement<{ owner: string }, [string, string, string, string, string, string, string]>;
  readonly beginBoot: Statement<unknown, [string, string]>;
  readonly endBoot: Statement<unknown, [string]>;
  readonly uncleanBootsSince: Statement<{ count: number }, [string, string]>;

  readonly tombstone: Statement<unknown, [string, string, string]>;
  readonly clearTombstone: Statement<unknown, AppSid>;
  readonly isTombstoned: Statement<{ one: number }, AppSid>;

  constructor(db: Database) {
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
    this.uncleanBootsSince = db.prepare("SELECT count(*) AS count FROM daemon_boots WHERE clean = 0 AND started_at >= ? AND boot_id != ?");
    this.touch = db.prepare("UPDATE sessions SET last_touched_at = ? WHERE pk = ?");
    this.setTitle = db.prepare("UPDATE sessions SET title = ? WHERE pk = ?");
    this.setAcl = db.prepare("UPDATE sessions SET viewers = ?, contributors = ? WHERE pk = ?");

    this.maxSeq = db.prepare("SELECT max(seq) AS head FROM events WHERE session_pk = ?");
    this.readEvents = db.prepare(
      "SELECT seq, payload FROM events WHERE session_pk = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
    );
    // Payloads only, no LIMIT: the caller bounds the seq range and derives each seq from the
    // row count (seqs are contiguous), falling back to readEvents if the count disagrees.
    this.readPayloads = db.prepare("SELECT payload FROM events WHERE session_pk = ? AND seq > ? AND seq <= ? ORDER BY seq");
    this.deleteEvents = db.prepare("DELETE FROM events WHERE session_pk = ?");
    this.probe = db.prepare("SELECT 1 FROM events LIMIT 1");

    this.insertJournal = db.prepare(`${JOURNAL_COLUMNS}(?, ?, ?, ?, ?, ?, ?)`);
    this.insertJournalChunk = db.prepare(JOURNAL_COLUMNS + Array(JOURNAL_CHUNK).fill("(?, ?, ?, ?, ?, ?, ?)").join(", "));
    // Scans the journal (no index on session_pk): it is bounded by the merge threshold.
    this.deleteJournal = db.prepare("DELETE FROM journal WHERE session_pk = ?");
    this.loadJournal = db.prepare("SELECT id, session_pk, seq, payload FROM journal ORDER BY id");
    // The oldest journal rows, sorted into the clustered table; trimJournal then deletes exactly
    // those rows in the same transaction.
    this.mergeJournal = db.prepare(
      "INSERT INTO events (session_pk, seq, ts, author, kind, payload) SELECT session_pk, seq, ts, author, kind, payload FROM journal WHERE id <= ? ORDER BY session_pk, seq",
    );
    this.trimJournal = db.prepare("DELETE FROM journal WHERE id <= ?");

    this.inboxState = db.prepare("SELECT drained FROM inbox WHERE session_pk = ? AND prompt_id = ?");
    this.insertInbox = db.prepare(
      "INSERT INTO inbox (session_pk, prompt_id, message, queued_at, wake) VALUES (?, ?, ?, ?, ?)",
    );
    this.drainInbox = db.prepare("UPDATE inbox SET drained = 1 WHERE session_pk = ? AND prompt_id = ? AND drained = 0");
    this.pendingInbox = db.prepare(
      "SELECT prompt_id, message, queued_at, wake FROM inbox WHERE session_pk = ? AND drained = 0 ORDER BY ord",
    );
    this.awaitingTurn = db.prepare(
      "SELECT s.app, s.sid FROM sessions s JOIN (SELECT DISTINCT session_pk FROM inbox WHERE drained = 0 AND wake = 1) w ON w.session_pk = s.pk ORDER BY s.pk",
    );
    this.deleteInbox = db.prepare("DELETE FROM inbox WHERE session_pk = ?");

    this.tombstone = db.prepare("INSERT OR REPLACE INTO tombstones (app, sid, deleted_at) VALUES (?, ?, ?)");
    this.clearTombstone = db.prepare("DELETE FROM tombstones WHERE app = ? AND sid = ?");
    this.isTombstoned = db.prepare("SELECT 1 AS one FROM tombstones WHERE app = ? AND sid = ?");
  }

  finalizeAll(): void {
    for (const value of Object.values(this)) {
      if (value !== null && typeof value === "object" && "finalize" in value) (value as Statement).finalize();
    }
  }
}
