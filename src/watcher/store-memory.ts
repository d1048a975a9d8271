/**
 * The occurrence store's memory, in the same sqlite file as the rows
 * (docs/watcher-pipeline.md#occurrence-store): the `facts` table distillation writes (D424), the
 * incidents still open between runs, and the one topology graph snapshot (D425). Both are bounded
 * and pruned with the rows: a fact not seen for `--store-ttl` goes, a snapshot older than it goes,
 * and when the file is over `--store-max-mb` with no rows left to drop the least recently seen
 * facts go next, then the snapshot. A snapshot larger than a quarter of the bound is not written.
 */
import type { Database } from "bun:sqlite";
import {
  type DistillLimits,
  type DistillState,
  type Fact,
  type OpenIncident,
  distill,
  distillLimitsFor,
  factClass,
  factKey,
  meanResolveMs,
} from "./core/distill.ts";
import { type GraphContents, type GraphSnapshot, decodeGraph, encodeGraph } from "./core/graph-snapshot.ts";
import type { OccurrenceRow, Route } from "./core/occurrence.ts";
import type { WatcherMetrics } from "./watcher-metrics.ts";

export const MEMORY_SCHEMA = `CREATE TABLE IF NOT EXISTS facts (
  key TEXT PRIMARY KEY,
  cluster TEXT NOT NULL, kind TEXT NOT NULL, reason TEXT NOT NULL, namespace TEXT NOT NULL, workload TEXT NOT NULL,
  class TEXT NOT NULL, severity TEXT NOT NULL,
  occurrences INTEGER NOT NULL, incidents INTEGER NOT NULL, resolved INTEGER NOT NULL,
  resolve_ms_total INTEGER NOT NULL, mean_resolve_ms INTEGER, recurrences INTEGER NOT NULL,
  first_seen INTEGER NOT NULL, last_seen INTEGER NOT NULL, last_resolved INTEGER, last_session TEXT,
  routes TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS facts_last_seen ON facts(last_seen);
CREATE TABLE IF NOT EXISTS memory_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS graph_snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL, body BLOB NOT NULL);`;

/** Occurrence rows read per step of a distillation run. */
const DISTILL_CHUNK = 5000;

export interface StoreMemoryOptions {
  maxBytes: number;
  metrics?: WatcherMetrics | undefined;
  limits?: DistillLimits;
}

type Raw = Record<string, unknown>;

function factOf(raw: Raw): Fact {
  return {
    cluster: String(raw.cluster),
    kind: String(raw.kind),
    reason: String(raw.reason),
    namespace: String(raw.namespace),
    workload: String(raw.workload),
    severity: String(raw.severity),
    occurrences: Number(raw.occurrences),
    incidents: Number(raw.incidents),
    resolved: Number(raw.resolved),
    resolveMsTotal: Number(raw.resolve_ms_total),
    recurrences: Number(raw.recurrences),
    firstSeen: Number(raw.first_seen),
    lastSeen: Number(raw.last_seen),
    ...(raw.last_resolved === null ? {} : { lastResolved: Number(raw.last_resolved) }),
    ...(raw.last_session === null ? {} : { lastSession: String(raw.last_session) }),
    routes: JSON.parse(String(raw.routes)) as Partial<Record<Route, number>>,
  };
}

function rowOfRaw(raw: Raw): OccurrenceRow {
  return {
    at: Number(raw.at),
    route: raw.route as Route,
    kind: String(raw.kind),
    severity: String(raw.severity),
    reason: String(raw.reason),
    namespace: String(raw.namespace),
    kindOfObject: String(raw.kind_of_object),
    name: String(raw.name),
    uid: String(raw.uid),
    cluster: String(raw.cluster),
    workload: String(raw.workload ?? ""),
    ...(raw.session_id ? { sessionId: String(raw.session_id) } : {}),
  };
}

export class StoreMemory {
  constructor(
    private readonly db: Database,
    private readonly options: StoreMemoryOptions,
  ) {
    db.exec(MEMORY_SCHEMA);
  }

  private meta(key: string): string | undefined {
    const row = this.db.query("SELECT value FROM memory_meta WHERE key = ?").get(key) as { value: string } | null;
    return row?.value;
  }

  private loadState(): DistillState {
    const facts = new Map<string, Fact>();
    for (const raw of this.db.query("SELECT * FROM facts").all() as Raw[]) facts.set(String(raw.key), factOf(raw));
    const open = new Map<string, OpenIncident>(JSON.parse(this.meta("open_incidents") ?? "[]") as never);
    // An open incident whose fact was pruned cannot resolve into it any more.
    for (const [key, incident] of open) if (!facts.has(incident.fact)) open.delete(key);
    return { facts, open };
  }

  /** Occurrence rows not distilled yet. */
  pending(): number {
    const through = Number(this.meta("distilled_through") ?? "0");
    return (this.db.query("SELECT COUNT(*) AS n FROM occurrences WHERE id > ?").get(through) as { n: number }).n;
  }

  /**
   * Folds the rows written since the last run into the facts (D424); returns how many rows it
   * read and how many facts it wrote. A failure rolls the run back and counts it.
   */
  distill(): { rows: number; facts: number } {
    try {
      return this.db.transaction(() => this.distillOnce())();
    } catch (error) {
      this.options.metrics?.distillErrors();
      throw error;
    }
  }

  private distillOnce(): { rows: number; facts: number } {
    const state = this.loadState();
    const before = new Set(state.facts.keys());
    let through = Number(this.meta("distilled_through") ?? "0");
    const touched = new Set<string>();
    let read = 0;
    for (;;) {
      const raws = this.db
        .query("SELECT * FROM occurrences WHERE id > ? ORDER BY id LIMIT ?")
        .all(through, DISTILL_CHUNK) as Raw[];
      if (raws.length === 0) break;
      read += raws.length;
      through = Number(raws[raws.length - 1]?.id);
      for (const key of distill(
        state,
        raws.map(rowOfRaw),
        this.options.limits ?? distillLimitsFor(this.options.maxBytes),
      ))
        touched.add(key);
    }
    const remove = this.db.prepare("DELETE FROM facts WHERE key = ?");
    for (const key of before) if (!state.facts.has(key)) remove.run(key);
    const upsert = this.db.prepare(
      "INSERT OR REPLACE INTO facts (key, cluster, kind, reason, namespace, workload, class, severity, occurrences, incidents, resolved, resolve_ms_total, mean_resolve_ms, recurrences, first_seen, last_seen, last_resolved, last_session, routes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
    for (const key of touched) {
      const fact = state.facts.get(key);
      if (!fact) continue;
      const kind = factClass(fact);
      upsert.run(
        ...[factKey(fact), fact.cluster, fact.kind, fact.reason, fact.namespace, fact.workload, kind, fact.severity],
        ...[fact.occurrences, fact.incidents, fact.resolved, fact.resolveMsTotal, meanResolveMs(fact) ?? null],
        ...[fact.recurrences, fact.firstSeen, fact.lastSeen, fact.lastResolved ?? null, fact.lastSession ?? null],
        JSON.stringify(fact.routes),
      );
      this.options.metrics?.memoryFacts({ class: kind });
    }
    const setMeta = this.db.prepare("INSERT OR REPLACE INTO memory_meta (key, value) VALUES (?, ?)");
    setMeta.run("distilled_through", String(through));
    setMeta.run("open_incidents", JSON.stringify([...state.open]));
    return { rows: read, facts: touched.size };
  }

  facts(): Array<Fact & { class: string; meanResolveMs: number | null }> {
    return (this.db.query("SELECT * FROM facts ORDER BY last_seen DESC").all() as Raw[]).map((raw) => ({
      ...factOf(raw),
      class: String(raw.class),
      meanResolveMs: raw.mean_resolve_ms === null ? null : Number(raw.mean_resolve_ms),
    }));
  }

  /** Writes the graph snapshot (D425) unless it would take over a quarter of the size bound. */
  saveGraph(contents: GraphContents, at: number): { bytes: number } | { skipped: string } {
    const body = Bun.gzipSync(new TextEncoder().encode(encodeGraph({ ...contents, at })));
    if (body.byteLength > this.options.maxBytes / 4)
      return { skipped: `${body.byteLength} bytes is over a quarter of --store-max-mb` };
    this.db.query("INSERT OR REPLACE INTO graph_snapshot (id, at, body) VALUES (1, ?, ?)").run(at, body);
    return { bytes: body.byteLength };
  }

  /** The stored snapshot, nothing when there is none, or why it cannot be read. */
  loadGraph(): GraphSnapshot | { error: string } | undefined {
    const row = this.db.query("SELECT body FROM graph_snapshot WHERE id = 1").get() as { body: Uint8Array } | null;
    if (!row) return undefined;
    try {
      return decodeGraph(new TextDecoder().decode(Bun.gunzipSync(new Uint8Array(row.body))));
    } catch (error) {
      return { error: error instanceof Error ? error.message : String(error) };
    }
  }

  /** Drops facts not seen since `cutoff` and a snapshot older than it; returns the facts dropped. */
  pruneOlderThan(cutoff: number): number {
    this.db.query("DELETE FROM graph_snapshot WHERE at < ?").run(cutoff);
    return this.db.query("DELETE FROM facts WHERE last_seen < ?").run(cutoff).changes;
  }

  /** With no rows left to drop: the least recently seen tenth of the facts, else the snapshot. */
  shed(): number {
    const facts = (this.db.query("SELECT COUNT(*) AS n FROM facts").get() as { n: number }).n;
    if (facts > 0)
      return this.db
        .query("DELETE FROM facts WHERE key IN (SELECT key FROM facts ORDER BY last_seen LIMIT ?)")
        .run(Math.max(1, Math.ceil(facts / 10))).changes;
    return this.db.query("DELETE FROM graph_snapshot").run().changes;
  }
}
