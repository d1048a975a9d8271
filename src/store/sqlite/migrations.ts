/**
 * Schema of the sqlite session store and its ordered migrations. The schema version is
 * `PRAGMA user_version`; migration N (1-based) takes the file from version N-1 to N in one
 * transaction. Owns DDL, and the one-time re-encoding of event rows a migration requires (v4);
 * never opens files.
 */
import type { Database } from "bun:sqlite";
import { schemaRefusal } from "../store-rules.ts";

type Migration = (db: Database) => void;

const V1_SCHEMA = `
CREATE TABLE sessions (
  pk INTEGER PRIMARY KEY AUTOINCREMENT,
  app TEXT NOT NULL,
  sid TEXT NOT NULL,
  owner TEXT NOT NULL,
  viewers TEXT NOT NULL,
  contributors TEXT NOT NULL,
  title TEXT,
  created_at TEXT NOT NULL,
  last_touched_at TEXT NOT NULL,
  UNIQUE (app, sid)
) STRICT;
CREATE INDEX sessions_by_sid ON sessions (sid);

CREATE TABLE events (
  session_pk INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  ts TEXT NOT NULL,
  author TEXT NOT NULL,
  kind TEXT NOT NULL,
  payload TEXT NOT NULL,
  PRIMARY KEY (session_pk, seq)
) WITHOUT ROWID, STRICT;

CREATE TABLE inbox (
  ord INTEGER PRIMARY KEY,
  session_pk INTEGER NOT NULL,
  prompt_id TEXT NOT NULL,
  message TEXT NOT NULL,
  queued_at TEXT NOT NULL,
  wake INTEGER NOT NULL,
  drained INTEGER NOT NULL DEFAULT 0,
  UNIQUE (session_pk, prompt_id)
) STRICT;
CREATE INDEX inbox_pending ON inbox (session_pk, ord) WHERE drained = 0;
CREATE INDEX inbox_wake ON inbox (session_pk) WHERE drained = 0 AND wake = 1;

CREATE TABLE tombstones (
  app TEXT NOT NULL,
  sid TEXT NOT NULL,
  deleted_at TEXT NOT NULL,
  PRIMARY KEY (app, sid)
) WITHOUT ROWID, STRICT;
`;

/**
 * v2: the append journal (log-structured write path). Group commits append event rows here in
 * arrival order (sequential page writes); a merge later moves them, sorted, into the clustered
 * `events` table and deletes them in the same transaction. A row lives in exactly one of the two.
 * No secondary index: the journal is small and only ever scanned whole or by id range.
 */
const V2_JOURNAL = `
CREATE TABLE journal (
  id INTEGER PRIMARY KEY,
  session_pk INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  ts TEXT NOT NULL,
  author TEXT NOT NULL,
  kind TEXT NOT NULL,
  payload TEXT NOT NULL
) STRICT;
`;

/**
 * v3: daemon coordination for auto-continue. `interruption_claims`: one row per interrupted turn
 * a daemon decided to re-drive; another daemon on the same store stands down until it expires.
 * `daemon_boots`: one row per daemon start, marked clean on an orderly stop (the crash-loop
 * breaker counts the unclean ones).
 */
const V3_COORDINATION = `
CREATE TABLE interruption_claims (
  app TEXT NOT NULL,
  sid TEXT NOT NULL,
  interruption TEXT NOT NULL,
  owner TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  PRIMARY KEY (app, sid, interruption)
) WITHOUT ROWID, STRICT;

CREATE TABLE daemon_boots (
  boot_id TEXT PRIMARY KEY,
  started_at TEXT NOT NULL,
  clean INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID, STRICT;
`;

/**
 * v4: block-encoded event log (D150). `log`: the append journal, ONE row per group commit whose
 * body is the JSON array `[[session_pk, first_seq, [event, ...]], ...]` of every event row the
 * commit wrote; rows of a session deleted later stay in the body and are skipped (pks are never
 * reused). `event_blocks`: a session's merged events, each row the JSON array of the consecutive
 * events first_seq..last_seq (at most MAX_BLOCK_ROWS of them). The v3 tables' rows (journal rows
 * a crash left first, as the v3 merge would have moved them) are re-encoded into blocks, cut at
 * any seq gap, and the v3 tables dropped.
 */
const V4_BLOCKS = `
CREATE TABLE log (
  id INTEGER PRIMARY KEY,
  body TEXT NOT NULL
) STRICT;
CREATE TABLE event_blocks (
  session_pk INTEGER NOT NULL,
  first_seq INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (session_pk, first_seq)
) WITHOUT ROWID, STRICT;
INSERT INTO events (session_pk, seq, ts, author, kind, payload)
  SELECT session_pk, seq, ts, author, kind, payload FROM journal ORDER BY session_pk, seq;
INSERT INTO event_blocks (session_pk, first_seq, last_seq, body)
  SELECT session_pk, min(seq), max(seq), '[' || group_concat(payload, ',' ORDER BY seq) || ']'
  FROM (SELECT session_pk, seq, payload, seq - row_number() OVER (PARTITION BY session_pk ORDER BY seq) AS run FROM events)
  GROUP BY session_pk, run, (seq - run - 1) / 64;
DROP TABLE journal;
DROP TABLE events;
`;

/**
 * v5: `event_blocks` becomes a rowid table (its primary key an index beside it) instead of
 * WITHOUT ROWID (D152). A block is ~14 KB: in a WITHOUT ROWID b-tree at most ~1 KB of a row stays
 * on its leaf page, and inserting such rows cost about twice as much per merge on this machine
 * as a rowid table with the same key. Same columns, same rows, same order.
 */
const V5_ROWID_BLOCKS = `
CREATE TABLE event_blocks_v5 (
  session_pk INTEGER NOT NULL,
  first_seq INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (session_pk, first_seq)
) STRICT;
INSERT INTO event_blocks_v5 (session_pk, first_seq, last_seq, body)
  SELECT session_pk, first_seq, last_seq, body FROM event_blocks ORDER BY session_pk, first_seq;
DROP TABLE event_blocks;
ALTER TABLE event_blocks_v5 RENAME TO event_blocks;
`;

/**
 * v6: a tombstone remembers the deleted session's owner, so a repeated DELETE answers 500 only to
 * a caller who could have deleted it and 404 to everyone else (D161); rows from earlier files
 * have owner '' (only admins and single-caller daemons see their 500). Looked up by id for the
 * shortcut path.
 */
const V6_TOMBSTONE_OWNER = `
ALTER TABLE tombstones ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX tombstones_by_sid ON tombstones (sid);
`;

/**
 * v7: a session's abort marker lives on its row (docs/svc-pauses.md#abort; never in the transcript):
 * when, why and by whom it was aborted; NULL while it is not. Set once, never cleared.
 */
const V7_ABORT_MARKER = `
ALTER TABLE sessions ADD COLUMN aborted_at TEXT;
ALTER TABLE sessions ADD COLUMN abort_reason TEXT;
ALTER TABLE sessions ADD COLUMN aborted_by TEXT;
`;

/** v8: the trace context of the request that queued an inbox message, JSON `{traceparent, tracestate?}` (D301). */
const V8_INBOX_TRACE = `
ALTER TABLE inbox ADD COLUMN trace_context TEXT;
`;

/**
 * Most events one `event_blocks` row may hold, in any file of schema v4+: reads seek to
 * first_seq > afterSeq - MAX_BLOCK_ROWS. Never lower it (blocks already written may be this long).
 */
export const MAX_BLOCK_ROWS = 256;

/** Append only; never edit a shipped migration. */
const MIGRATIONS: readonly Migration[] = [
  (db) => db.exec(V1_SCHEMA),
  (db) => db.exec(V2_JOURNAL),
  (db) => db.exec(V3_COORDINATION),
  (db) => db.exec(V4_BLOCKS),
  (db) => db.exec(V5_ROWID_BLOCKS),
  (db) => db.exec(V6_TOMBSTONE_OWNER),
  (db) => db.exec(V7_ABORT_MARKER),
  (db) => db.exec(V8_INBOX_TRACE),
];

export const SCHEMA_VERSION = MIGRATIONS.length;

export function schemaVersion(db: Database): number {
  const row = db.query<{ user_version: number }, []>("PRAGMA user_version").get();
  return row?.user_version ?? 0;
}

/** Brings the file to SCHEMA_VERSION; refuses a file written by a newer spar. */
export function migrate(db: Database, path: string): void {
  const current = schemaVersion(db);
  const refused = schemaRefusal(path, current, SCHEMA_VERSION, { hint: " or choose another --session-db" });
  if (refused !== undefined) throw refused;
  for (let version = current; version < SCHEMA_VERSION; version++) {
    const step = MIGRATIONS[version];
    if (step === undefined) break;
    db.transaction(() => {
      step(db);
      // PRAGMA takes no bound parameters; the value is a code constant, never input.
      db.exec(`PRAGMA user_version = ${version + 1}`);
    }).immediate();
  }
  // Schema pages go to the main file at once: the daemon starts with an empty WAL rather than
  // one already near the checkpointer's size target.
  if (current < SCHEMA_VERSION) db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
}
