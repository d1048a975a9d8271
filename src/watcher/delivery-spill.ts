/**
 * Where payloads owed to the sink go once the delivery queue's memory window is full (D451): a
 * table in the occurrence store's file (`--store`), oldest first. While anything is spilled,
 * every new payload is spilled behind it, and payloads come back into the window oldest first as
 * the window drains, so the queue stays one first-in first-out line (per session too) however
 * long the daemon is down. Each row is committed before the payload counts as queued; a restart
 * finds the spilled rows where it left them, behind the journal's window. Bounded by `maxRows`
 * (the queue then gives up its oldest payload, counted as an overflow). The pages its rows occupy
 * are measured (`bytes`) so the occurrence store's size bound leaves them out (D454).
 */
import type { Database, Statement } from "bun:sqlite";
import type { PendingInject, SpillStore } from "./pending-injects.ts";

const SCHEMA = `CREATE TABLE IF NOT EXISTS delivery_spill (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT,
  open_key TEXT,
  entry TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS delivery_spill_session ON delivery_spill(session_id);
CREATE INDEX IF NOT EXISTS delivery_spill_open ON delivery_spill(open_key);`;

/** The default bound: at 8 KiB a payload (the --inject-max-bytes default), under 400 MiB. */
export const DEFAULT_SPILL_ROWS = 50_000;

/** Bytes of the file's pages in use (free pages excluded). */
export function usedBytes(db: Database): number {
  const pages = db.query("PRAGMA page_count").get() as { page_count: number };
  const free = db.query("PRAGMA freelist_count").get() as { freelist_count: number };
  const size = db.query("PRAGMA page_size").get() as { page_size: number };
  return (pages.page_count - free.freelist_count) * size.page_size;
}

/** Bytes the spill's table and indexes occupy in a file opened with rows already spilled. */
function measured(db: Database): number {
  try {
    const row = db
      .query("SELECT coalesce(sum(pgsize), 0) AS n FROM dbstat WHERE name LIKE 'delivery_spill%'")
      .get() as { n: number };
    return row.n;
  } catch {
    // A sqlite built without dbstat: the payloads' own bytes, a slight undercount.
    return (db.query("SELECT coalesce(sum(length(entry)), 0) AS n FROM delivery_spill").get() as { n: number }).n;
  }
}

export class DeliverySpill implements SpillStore {
  private count: number;
  /** Bytes of the pages the spill occupies (D454: not the occurrence store's to prune). */
  private used: number;
  private readonly insert: Statement;
  private readonly oldestRow: Statement;
  private readonly removeRow: Statement;
  private readonly bySession: Statement;
  private readonly byOpen: Statement;

  constructor(
    private readonly db: Database,
    readonly maxRows = DEFAULT_SPILL_ROWS,
  ) {
    db.exec(SCHEMA);
    this.count = (db.query("SELECT count(*) AS n FROM delivery_spill").get() as { n: number }).n;
    this.used = this.count > 0 ? measured(db) : 0;
    this.insert = db.prepare("INSERT INTO delivery_spill (session_id, open_key, entry) VALUES (?, ?, ?)");
    this.oldestRow = db.prepare("SELECT seq, entry FROM delivery_spill ORDER BY seq LIMIT 1");
    this.removeRow = db.prepare("DELETE FROM delivery_spill WHERE seq = ?");
    this.bySession = db.prepare("SELECT 1 FROM delivery_spill WHERE session_id = ? LIMIT 1");
    this.byOpen = db.prepare("SELECT 1 FROM delivery_spill WHERE open_key = ? AND session_id IS NULL LIMIT 1");
  }

  get size(): number {
    return this.count;
  }

  /** Bytes of the file the spilled rows occupy (counted as they come and go). */
  get bytes(): number {
    return this.used;
  }

  get full(): boolean {
    return this.count >= this.maxRows;
  }

  /** Spills one payload behind the others (committed when this returns). */
  push(entry: PendingInject): void {
    const openKey = entry.sessionId === undefined ? (entry.binding?.key ?? null) : null;
    const before = usedBytes(this.db);
    this.insert.run(entry.sessionId ?? null, openKey, JSON.stringify({ ...entry, attempts: 0 }));
    this.count++;
    this.used = Math.max(0, this.used + usedBytes(this.db) - before);
  }

  /** The oldest spilled payload and its row, still spilled until `forget(seq)`. */
  oldest(): { seq: number; entry: PendingInject } | undefined {
    const row = this.oldestRow.get() as { seq: number; entry: string } | null;
    return row ? { seq: row.seq, entry: JSON.parse(row.entry) as PendingInject } : undefined;
  }

  /** Drops a row once its payload is back in the window (journaled first: a crash between re-reads it by id). */
  forget(seq: number): void {
    const before = usedBytes(this.db);
    this.removeRow.run(seq);
    this.count--;
    this.used = this.count === 0 ? 0 : Math.max(0, this.used + usedBytes(this.db) - before);
  }

  /** Whether a spilled payload is owed to this session. */
  owes(sessionId: string): boolean {
    return this.count > 0 && Boolean(this.bySession.get(sessionId));
  }

  /** Whether a spilled open (no session yet) is queued for this dedup key. */
  hasOpen(key: string): boolean {
    return this.count > 0 && Boolean(this.byOpen.get(key));
  }
}
