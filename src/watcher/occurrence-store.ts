/**
 * `--store`: the occurrence store (docs/watcher-pipeline.md#occurrence-store; its `watcher_store_*`
 * series in docs/watcher-pipeline.md#metrics).
 * Every signal the pipeline routed is one row with its route (injected, suppressed, storm,
 * storm-member, resolved, followup, error), its identity and the session it went to, in a
 * sentinel-local bun:sqlite file. Writes are buffered and flushed in one transaction (a failed
 * write drops the batch and counts it); pruning keeps the file within `--store-ttl` (rows older than it go)
 * and `--store-max-mb` (oldest rows first, freed pages returned with incremental vacuum), checked
 * after every flush so a burst cannot outgrow the bound between prune ticks (D427). The same file
 * holds the store's memory (store-memory.ts: distilled facts, the graph snapshot), pruned by the
 * same two bounds; with distillation on, rows not distilled yet are distilled before a size prune
 * drops them, so the facts never miss what the bound took (D424). The file
 * and its `-wal`/`-shm` are owner-only (0600, a new directory 0700), and `secure_delete` zeroes
 * pruned rows, so their messages do not linger in free pages. The delivery spill's rows share the
 * file but not the size bound: the bound measures the store's own pages (D454).
 */
import { Database } from "bun:sqlite";
import type { OccurrenceRow, Route } from "./core/occurrence.ts";
import { ensurePrivateSqliteFile } from "../fs/private-files.ts";
import type { WatcherMetrics } from "./watcher-metrics.ts";
import { StoreMemory } from "./store-memory.ts";
import { DeliverySpill, usedBytes } from "./delivery-spill.ts";

export type { OccurrenceRow, Route };

export interface OccurrenceStoreOptions {
  path: string;
  maxBytes: number;
  ttlMs: number;
  metrics?: WatcherMetrics;
  now?: () => number;
  /** Rows held before a flush is forced (the runner also flushes every second). */
  batch?: number;
  /** Distillation is on (`--distill-interval` above 0): a size prune distills what it would drop first. */
  distill?: boolean;
}

const SCHEMA = `CREATE TABLE IF NOT EXISTS occurrences (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  route TEXT NOT NULL,
  kind TEXT NOT NULL,
  severity TEXT NOT NULL,
  reason TEXT NOT NULL,
  namespace TEXT NOT NULL,
  kind_of_object TEXT NOT NULL,
  name TEXT NOT NULL,
  uid TEXT NOT NULL,
  cluster TEXT NOT NULL,
  session_id TEXT,
  workload TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS occurrences_at ON occurrences(at);`;

export class OccurrenceStore {
  private readonly db: Database;
  private readonly now: () => number;
  private readonly batch: number;
  private buffer: OccurrenceRow[] = [];
  private readonly insert: ReturnType<Database["prepare"]>;
  /** Distilled facts and the graph snapshot, in the same file (D424, D425). */
  readonly memory: StoreMemory;
  /** Payloads owed to the sink beyond the delivery queue's window, in the same file (D451). */
  readonly spill: DeliverySpill;

  constructor(private readonly options: OccurrenceStoreOptions) {
    ensurePrivateSqliteFile(options.path);
    this.db = new Database(options.path, { create: true });
    this.db.exec("PRAGMA secure_delete = ON");
    // auto_vacuum must be chosen before the first table exists; it lets pruning shrink the file.
    this.db.exec("PRAGMA auto_vacuum = INCREMENTAL");
    this.db.exec("PRAGMA journal_mode = WAL");
    this.db.exec("PRAGMA synchronous = NORMAL");
    this.db.exec(SCHEMA);
    // A store written before D424 has no workload column: add it (older rows read as "").
    const columns = this.db.query("PRAGMA table_info(occurrences)").all() as Array<{ name: string }>;
    if (!columns.some((column) => column.name === "workload"))
      this.db.exec("ALTER TABLE occurrences ADD COLUMN workload TEXT NOT NULL DEFAULT ''");
    this.memory = new StoreMemory(this.db, { maxBytes: options.maxBytes, metrics: options.metrics });
    this.spill = new DeliverySpill(this.db);
    this.now = options.now ?? Date.now;
    this.batch = options.batch ?? 500;
    this.insert = this.db.prepare(
      "INSERT INTO occurrences (at, route, kind, severity, reason, namespace, kind_of_object, name, uid, cluster, session_id, workload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
  }

  /** Buffers one row; flushes when the batch is full. */
  record(row: OccurrenceRow): void {
    this.buffer.push(row);
    if (this.buffer.length >= this.batch) this.flush();
  }

  /** Writes the buffered rows in one transaction. */
  flush(): void {
    if (this.buffer.length === 0) return;
    const rows = this.buffer;
    this.buffer = [];
    try {
      this.db.transaction(() => {
        for (const row of rows)
          this.insert.run(
            row.at,
            row.route,
            row.kind,
            row.severity,
            row.reason,
            row.namespace,
            row.kindOfObject,
            row.name,
            row.uid,
            row.cluster,
            row.sessionId ?? null,
            row.workload ?? "",
          );
      })();
      for (const row of rows) this.options.metrics?.storeRecords({ route: row.route });
    } catch {
      this.options.metrics?.storeWriteDrops({ cause: "write_error" }, rows.length);
      return;
    }
    if (this.usedBytes() > this.options.maxBytes) this.prune();
  }

  /**
   * Bytes the rows occupy (pages in use, free pages excluded), less the delivery spill's pages:
   * payloads owed to the sink are not the store's to prune (D454).
   */
  usedBytes(): number {
    return Math.max(0, usedBytes(this.db) - this.spill.bytes);
  }

  /**
   * Drops rows, facts and a snapshot past the TTL, then the oldest rows until the store fits its
   * size bound (then the least recently seen facts, then the snapshot).
   */
  prune(): { ttl: number; size: number } {
    this.flush();
    const cutoff = this.now() - this.options.ttlMs;
    const ttl =
      this.db.query("DELETE FROM occurrences WHERE at < ?").run(cutoff).changes + this.memory.pruneOlderThan(cutoff);
    let size = 0;
    if (this.options.distill && this.usedBytes() > this.options.maxBytes && this.memory.pending() > 0)
      this.distillQuietly();
    while (this.usedBytes() > this.options.maxBytes) {
      const total = (this.db.query("SELECT COUNT(*) AS n FROM occurrences").get() as { n: number }).n;
      const chunk = Math.max(1, Math.ceil(total / 10));
      const dropped =
        total > 0
          ? this.db
              .query("DELETE FROM occurrences WHERE id IN (SELECT id FROM occurrences ORDER BY id LIMIT ?)")
              .run(chunk).changes
          : this.memory.shed();
      if (dropped === 0) break;
      size += dropped;
    }
    if (ttl + size > 0) {
      this.db.exec("PRAGMA incremental_vacuum");
      this.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    }
    if (ttl > 0) this.options.metrics?.storePrunedRows({ cause: "ttl" }, ttl);
    if (size > 0) this.options.metrics?.storePrunedRows({ cause: "size" }, size);
    return { ttl, size };
  }

  /** A distillation run whose failure is counted (distill_errors_total) and not thrown. */
  distillQuietly(): { rows: number; facts: number } | undefined {
    try {
      this.flush();
      return this.memory.distill();
    } catch {
      return undefined;
    }
  }

  count(): number {
    this.flush();
    return (this.db.query("SELECT COUNT(*) AS n FROM occurrences").get() as { n: number }).n;
  }

  rows(limit = 1000): OccurrenceRow[] {
    this.flush();
    const raw = this.db
      .query(
        "SELECT at, route, kind, severity, reason, namespace, kind_of_object, name, uid, cluster, session_id, workload FROM occurrences ORDER BY id LIMIT ?",
      )
      .all(limit) as Array<Record<string, unknown>>;
    return raw.map((row) => ({
      at: Number(row.at),
      route: row.route as Route,
      kind: String(row.kind),
      severity: String(row.severity),
      reason: String(row.reason),
      namespace: String(row.namespace),
      kindOfObject: String(row.kind_of_object),
      name: String(row.name),
      uid: String(row.uid),
      cluster: String(row.cluster),
      workload: String(row.workload),
      ...(row.session_id ? { sessionId: String(row.session_id) } : {}),
    }));
  }

  close(): void {
    this.flush();
    this.db.close();
  }
}
