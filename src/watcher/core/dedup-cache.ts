/**
 * The dedup cache (docs/watcher-pipeline.md#dedup): one entry per (uid, canonical reason) over a
 * rolling window, binding the key to its session. `observe` answers new or duplicate by four cases
 * (no entry; replay; retry safety net after the window; activity inside the window). At most 10,000
 * entries, the one with the oldest lastSeen evicted first. Snapshot and restore use the persisted
 * JSON shape; the file I/O is the caller's. Pure.
 */
import { rfc3339 } from "./go-time.ts";
import type { Severity } from "./signal.ts";

export const DEDUP_CAPACITY = 10_000;

/** What the recovery tracker and outcome records need, persisted with the binding. */
export interface DedupIncident {
  namespace: string;
  kind_of_object: string;
  name: string;
  container?: string;
  controller_ref?: string;
  node?: string;
  fingerprint: string;
  cluster: string;
  /** Epoch ms of the incident's first event. */
  first_event?: number;
}

export interface DedupEntry {
  sessionId?: string;
  /** Watcher wall clock, epoch ms. */
  firstSeen: number;
  lastSeen: number;
  /** The newest event time seen for the key (epoch ms). */
  eventLastTs: number;
  count: number;
  incident?: DedupIncident;
  /** Fingerprint of the storm the incident was folded into. */
  storm?: string;
  sourceKind?: string;
  /** Source families that joined the incident this window (`family.member`, D422). In memory only. */
  joinedFamilies?: string[];
  /**
   * The severity the incident's session last heard (D416): a duplicate above it is escalated
   * into the session once. In memory only: after a restart nothing escalates until it is known.
   */
  severity?: Severity;
}

export type DedupResult =
  | { outcome: "new"; key: string; entry: DedupEntry }
  | { outcome: "duplicate"; key: string; entry: DedupEntry; replay: boolean };

export function dedupKey(uid: string, canonicalReason: string): string {
  return `${uid}|${canonicalReason}`;
}

export class DedupCache {
  private readonly entries = new Map<string, DedupEntry>();

  constructor(
    private readonly windowMs: number,
    private readonly capacity = DEDUP_CAPACITY,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): DedupEntry | undefined {
    return this.entries.get(key);
  }

  keys(): IterableIterator<string> {
    return this.entries.keys();
  }

  observe(key: string, eventTime: number, now: number): DedupResult {
    const entry = this.entries.get(key);
    if (!entry)
      return {
        outcome: "new",
        key,
        entry: this.insert(key, { firstSeen: now, lastSeen: now, eventLastTs: eventTime, count: 1 }),
      };
    if (eventTime <= entry.eventLastTs) {
      entry.count++;
      return { outcome: "duplicate", key, entry, replay: true };
    }
    if (now - entry.lastSeen > this.windowMs) {
      return {
        outcome: "new",
        key,
        entry: this.insert(key, { firstSeen: now, lastSeen: now, eventLastTs: eventTime, count: 1 }),
      };
    }
    entry.count++;
    entry.lastSeen = now;
    entry.eventLastTs = eventTime;
    this.touch(key, entry);
    return { outcome: "duplicate", key, entry, replay: false };
  }

  /** Binds a key to a session (the open succeeded). */
  bind(key: string, sessionId: string, incident?: DedupIncident): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    entry.sessionId = sessionId;
    if (incident) entry.incident = incident;
  }

  private insert(key: string, entry: DedupEntry): DedupEntry {
    this.entries.delete(key);
    this.entries.set(key, entry);
    while (this.entries.size > this.capacity) this.evictOldest();
    return entry;
  }

  /** Keep map order equal to lastSeen order, so the first key is always the oldest. */
  private touch(key: string, entry: DedupEntry): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
  }

  private evictOldest(): void {
    const oldest = this.entries.keys().next().value;
    if (oldest !== undefined) this.entries.delete(oldest);
  }

  /** The persisted form: an object keyed `<uid>|<CanonicalReason>`, RFC 3339 times. */
  snapshot(): Record<string, PersistedEntry> {
    const out: Record<string, PersistedEntry> = {};
    for (const [key, entry] of this.entries) {
      out[key] = {
        ...(entry.sessionId ? { session_id: entry.sessionId } : {}),
        first_seen: rfc3339(entry.firstSeen),
        last_seen: rfc3339(entry.lastSeen),
        event_last_ts: rfc3339(entry.eventLastTs),
        count: entry.count,
        ...(entry.incident ? { incident: entry.incident } : {}),
        ...(entry.storm ? { storm: entry.storm } : {}),
        ...(entry.sourceKind ? { source_kind: entry.sourceKind } : {}),
      };
    }
    return out;
  }

  /** Loads a snapshot; malformed entries and unknown fields are skipped. Returns entries loaded. */
  restore(data: unknown): number {
    if (typeof data !== "object" || data === null || Array.isArray(data)) return 0;
    const loaded = Object.entries(data as Record<string, unknown>)
      .map(([key, value]) => [key, parseEntry(value)] as const)
      .filter((pair): pair is readonly [string, DedupEntry] => pair[1] !== undefined && pair[0].includes("|"))
      .sort((a, b) => a[1].lastSeen - b[1].lastSeen);
    for (const [key, entry] of loaded) this.insert(key, entry);
    return loaded.length;
  }
}

export interface PersistedEntry {
  session_id?: string;
  first_seen: string;
  last_seen: string;
  event_last_ts: string;
  count: number;
  incident?: DedupIncident;
  storm?: string;
  source_kind?: string;
}

function time(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const parsed = Date.parse(value);
  return Number.isFinite(parsed) ? parsed : undefined;
}

function parseIncident(value: unknown): DedupIncident | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const record = value as Record<string, unknown>;
  const text = (key: string) => (typeof record[key] === "string" ? (record[key] as string) : undefined);
  const namespace = text("namespace");
  const kind = text("kind_of_object");
  const name = text("name");
  if (namespace === undefined || kind === undefined || name === undefined) return undefined;
  const incident: DedupIncident = {
    namespace,
    kind_of_object: kind,
    name,
    fingerprint: text("fingerprint") ?? "",
    cluster: text("cluster") ?? "",
  };
  for (const key of ["container", "controller_ref", "node"] as const) {
    const found = text(key);
    if (found) incident[key] = found;
  }
  if (typeof record.first_event === "number") incident.first_event = record.first_event;
  return incident;
}

function parseEntry(value: unknown): DedupEntry | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const record = value as Record<string, unknown>;
  const firstSeen = time(record.first_seen);
  const lastSeen = time(record.last_seen);
  const eventLastTs = time(record.event_last_ts) ?? lastSeen;
  if (firstSeen === undefined || lastSeen === undefined || eventLastTs === undefined) return undefined;
  if (typeof record.count !== "number" || !Number.isInteger(record.count) || record.count < 1) return undefined;
  const entry: DedupEntry = { firstSeen, lastSeen, eventLastTs, count: record.count };
  if (typeof record.session_id === "string" && record.session_id !== "") entry.sessionId = record.session_id;
  const incident = parseIncident(record.incident);
  if (incident) entry.incident = incident;
  if (typeof record.storm === "string" && record.storm !== "") entry.storm = record.storm;
  if (typeof record.source_kind === "string" && record.source_kind !== "") entry.sourceKind = record.source_kind;
  return entry;
}
