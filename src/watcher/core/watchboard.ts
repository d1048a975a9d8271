/**
 * The watchboard's pure parts (docs/watcher-pipeline.md#watchboard, D418-D420): the buffer of
 * warning entries waiting for a digest, when it is due (`--watchboard-batch` entries or the oldest
 * waiting `--watchboard-flush`), the board's generation and digest count with its rotation after
 * `--watchboard-rotate` digests, and the `watchboard.digest` / `watchboard.rotated` payloads. The
 * session calls are src/watcher/watchboard.ts's. Pure.
 */
import { envelopeBytes } from "./fit.ts";
import { rfc3339 } from "./go-time.ts";
import { maskText } from "./mask.ts";
import { capMessage } from "./payload.ts";
import type { Severity, Signal } from "./signal.ts";

/** Entries the buffer holds at most while digests cannot be delivered; the oldest go first (D418). */
export const BOARD_CAPACITY = 10_000;

/** A digest entry's message is cut to this many bytes (D419). */
export const ENTRY_MESSAGE_CAP_BYTES = 512;

export interface WatchboardSettings {
  cluster: string;
  /** Entries that make a digest due (`--watchboard-batch`, at least 1). */
  batch: number;
  /** Longest an entry waits (`--watchboard-flush`, above 0). */
  flushMs: number;
  /** Digests per board session before the next flush rotates (`--watchboard-rotate`, at least 1). */
  rotate: number;
}

/** One buffered warning: its dedup key, identity and the window count so far. */
export interface BoardEntry {
  key: string;
  kind: string;
  fingerprint: string;
  reason: string;
  namespace: string;
  kindOfObject: string;
  name: string;
  uid: string;
  severity: Severity;
  /** Masked and cut to 512 bytes. */
  message: string;
  count: number;
  firstSeen: number;
  lastSeen: number;
  /** Watcher clock when it entered the buffer. */
  bufferedAt: number;
}

export interface DigestEntryWire {
  kind: string;
  fingerprint: string;
  reason: string;
  namespace?: string;
  kind_of_object: string;
  name: string;
  uid: string;
  count: number;
  first_seen: string;
  last_seen: string;
  /** Spar's additions to the entry (D419): what a reader of the board needs to judge it. */
  severity: Severity;
  /** Cut shorter, or left out, when the digest would not fit `--inject-max-bytes` (D420). */
  message?: string;
}

export interface DigestPayload {
  kind: "watchboard.digest";
  cluster: string;
  board_generation: number;
  sequence: number;
  window_start: string;
  window_end: string;
  entries: DigestEntryWire[];
}

export interface RotatedPayload {
  kind: "watchboard.rotated";
  cluster: string;
  board_generation: number;
  successor_session_id: string;
  injects_count: number;
  rotated_at: string;
}

/** The tick period: a quarter of the flush age, within [1 s, 5 s] (D419). */
export function tickPeriodMs(flushMs: number): number {
  return Math.min(5000, Math.max(1000, Math.floor(flushMs / 4)));
}

export function entryOf(signal: Signal, key: string, fingerprint: string, now: number): BoardEntry {
  return {
    key,
    kind: signal.kind,
    fingerprint,
    reason: signal.reason,
    namespace: signal.namespace,
    kindOfObject: signal.kindOfObject,
    name: signal.name,
    uid: signal.uid,
    severity: signal.severity,
    message: capMessage(maskText(signal.message), ENTRY_MESSAGE_CAP_BYTES),
    count: 1,
    firstSeen: signal.firstSeen,
    lastSeen: signal.lastSeen,
    bufferedAt: now,
  };
}

/** The buffer in arrival order, one entry per dedup key. */
export class BoardBuffer {
  private readonly entries = new Map<string, BoardEntry>();

  constructor(
    private readonly settings: WatchboardSettings,
    private readonly capacity = BOARD_CAPACITY,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  holds(key: string): boolean {
    return this.entries.has(key);
  }

  /** Buffers the entry; past the capacity the oldest entry is dropped and returned. */
  add(entry: BoardEntry): BoardEntry | undefined {
    this.entries.set(entry.key, entry);
    if (this.entries.size <= this.capacity) return undefined;
    const oldest = this.entries.values().next().value as BoardEntry;
    this.entries.delete(oldest.key);
    return oldest;
  }

  /** A duplicate of a buffered entry: counted into it, never a second entry (D418). */
  note(key: string, lastSeen: number): boolean {
    const entry = this.entries.get(key);
    if (!entry) return false;
    entry.count += 1;
    entry.lastSeen = Math.max(entry.lastSeen, lastSeen);
    return true;
  }

  drop(key: string): void {
    this.entries.delete(key);
  }

  /** Due when the batch is full or the oldest entry has waited the flush age. */
  due(now: number): boolean {
    if (this.entries.size === 0) return false;
    if (this.entries.size >= this.settings.batch) return true;
    const oldest = this.entries.values().next().value as BoardEntry;
    return now - oldest.bufferedAt >= this.settings.flushMs;
  }

  /** The next digest's entries (at most a batch, oldest first), taken out of the buffer. */
  take(): BoardEntry[] {
    const taken = [...this.entries.values()].slice(0, this.settings.batch);
    for (const entry of taken) this.entries.delete(entry.key);
    return taken;
  }

  /** Entries of a digest that could not be delivered go back in front, to be sent next time. */
  restore(entries: readonly BoardEntry[]): void {
    const rest = [...this.entries.values()];
    this.entries.clear();
    for (const entry of [...entries, ...rest]) this.entries.set(entry.key, entry);
  }
}

/** The board's session, generation and digest count; what the next flush must do. */
export class BoardState {
  sessionId: string | undefined;
  generation = 0;
  digests = 0;

  constructor(private readonly rotate: number) {}

  /** `open` the first board, `rotate` to a successor, or `append` to the current one. */
  nextStep(): "open" | "rotate" | "append" {
    if (!this.sessionId) return "open";
    return this.digests >= this.rotate ? "rotate" : "append";
  }

  /** The generation and sequence the next digest carries. */
  nextDigest(): { generation: number; sequence: number } {
    return this.nextStep() === "append"
      ? { generation: this.generation, sequence: this.digests + 1 }
      : { generation: this.generation + 1, sequence: 1 };
  }

  /** A digest landed in a new board session (the first, or a rotation's successor). */
  opened(sessionId: string): void {
    this.sessionId = sessionId;
    this.generation += 1;
    this.digests = 1;
  }

  appended(): void {
    this.digests += 1;
  }
}

/** Below this many bytes a message is left out rather than cut. */
const MIN_MESSAGE_CUT = 64;

export function buildDigestPayload(
  cluster: string,
  digest: { generation: number; sequence: number },
  entries: readonly BoardEntry[],
  now: number,
  messageCap = ENTRY_MESSAGE_CAP_BYTES,
): DigestPayload {
  const windowStart = Math.min(...entries.map((entry) => entry.bufferedAt));
  return {
    kind: "watchboard.digest",
    cluster,
    board_generation: digest.generation,
    sequence: digest.sequence,
    window_start: rfc3339(windowStart),
    window_end: rfc3339(now),
    entries: entries.map((entry) => ({
      kind: entry.kind,
      fingerprint: entry.fingerprint,
      reason: entry.reason,
      ...(entry.namespace ? { namespace: entry.namespace } : {}),
      kind_of_object: entry.kindOfObject,
      name: entry.name,
      uid: entry.uid,
      count: entry.count,
      first_seen: rfc3339(entry.firstSeen),
      last_seen: rfc3339(entry.lastSeen),
      severity: entry.severity,
      ...(messageCap >= MIN_MESSAGE_CUT ? { message: capMessage(entry.message, messageCap) } : {}),
    })),
  };
}

export function buildRotatedPayload(
  cluster: string,
  generation: number,
  successor: string,
  injects: number,
  now: number,
): RotatedPayload {
  return {
    kind: "watchboard.rotated",
    cluster,
    board_generation: generation,
    successor_session_id: successor,
    injects_count: injects,
    rotated_at: rfc3339(now),
  };
}

/**
 * A digest that fits `--inject-max-bytes` (D420): every entry with the longest message cap that
 * fits (512 bytes down to 64), else without messages, else the longest prefix of entries that
 * fits (at least one); `rest` goes back to the buffer for the next digest.
 */
export function fitDigest(
  build: (entries: readonly BoardEntry[], messageCap: number) => DigestPayload,
  entries: readonly BoardEntry[],
  maxBytes: number,
): { payload: DigestPayload; rest: BoardEntry[] } {
  const fits = (payload: DigestPayload) => envelopeBytes(payload) <= maxBytes;
  const full = build(entries, ENTRY_MESSAGE_CAP_BYTES);
  if (fits(full)) return { payload: full, rest: [] };
  if (fits(build(entries, MIN_MESSAGE_CUT))) {
    let low = MIN_MESSAGE_CUT;
    let high = ENTRY_MESSAGE_CAP_BYTES;
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (fits(build(entries, mid))) low = mid;
      else high = mid - 1;
    }
    return { payload: build(entries, low), rest: [] };
  }
  let low = 1;
  let high = entries.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (fits(build(entries.slice(0, mid), 0))) low = mid;
    else high = mid - 1;
  }
  return { payload: build(entries.slice(0, low), 0), rest: entries.slice(low) };
}
