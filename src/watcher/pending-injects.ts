/**
 * The pending-inject journal: payloads the delivery queue still owes the sink, kept on disk so a
 * watcher restart re-sends them (issue 13 item 11). An append-only file of JSON lines, `put` (a
 * payload queued, or its session created) and `remove` (delivered or given up), owner-only (0600
 * in a 0700 directory); replayed at startup, where a torn last line (a crash mid-write) is skipped
 * with a warning, then compacted to the live entries; compacted again whenever the dead lines
 * outnumber the live ones, and on close. Without a path the journal is memory only.
 *
 * With a spill (D451: `--store`), the journal holds a window of at most `windowSize` payloads
 * and the rest wait in the spill, oldest first; a payload leaving the window brings the oldest
 * spilled one in. `entries()` is the window; `size`, `owes` and `hasOpen` count both.
 */
import { closeSync, existsSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from "node:fs";
import type { OpenBinding } from "./core/sink.ts";
import type { Logger } from "../telemetry/logger.ts";
import { PRIVATE_FILE_MODE, ensurePrivateFile } from "../fs/private-files.ts";

export interface PendingInject {
  /** The payload's id, stable across attempts and restarts. */
  id: string;
  /** The session to inject into; absent while the session is still to be created (a queued open). */
  sessionId?: string;
  payload: object;
  /** Set when the payload opens an incident: what to bind once its session exists. */
  binding?: OpenBinding;
  /** Epoch ms the payload was first queued (the give-up clock). */
  queuedAt: number;
  /** Attempts so far (in memory; a restart starts counting again). */
  attempts: number;
}

/** Where payloads past the window wait, oldest first (delivery-spill.ts, D451). */
export interface SpillStore {
  readonly size: number;
  readonly full: boolean;
  push(entry: PendingInject): void;
  oldest(): { seq: number; entry: PendingInject } | undefined;
  forget(seq: number): void;
  owes(sessionId: string): boolean;
  hasOpen(key: string): boolean;
}

type JournalLine = { op: "put"; entry: PendingInject } | { op: "remove"; id: string };

const COMPACT_SLACK = 64;

export class PendingInjects {
  private readonly live = new Map<string, PendingInject>();
  private descriptor: number | undefined;
  private lines = 0;

  constructor(
    private readonly path: string | undefined,
    private readonly logger: Logger,
    private readonly spill?: { store: SpillStore; windowSize: number },
  ) {
    if (path) {
      if (existsSync(path)) this.replay(readFileSync(path, "utf8"));
      ensurePrivateFile(path);
      this.compact();
    }
    // A crash between journaling a refilled payload and forgetting its row leaves it in both.
    for (let oldest = spill?.store.oldest(); oldest && this.live.has(oldest.entry.id); oldest = spill?.store.oldest())
      spill?.store.forget(oldest.seq);
    if (spill && spill.store.size > 0)
      logger.info(`delivery: ${spill.store.size} spilled pending inject(s) wait behind the window; re-sending`);
    this.refill();
  }

  /** The payloads in the window, oldest first (spilled ones come in as these leave). */
  entries(): PendingInject[] {
    return [...this.live.values()];
  }

  has(id: string): boolean {
    return this.live.has(id);
  }

  /** Payloads owed: the window and the spill. */
  get size(): number {
    return this.live.size + (this.spill?.store.size ?? 0);
  }

  /** Payloads waiting in the spill. */
  get spilled(): number {
    return this.spill?.store.size ?? 0;
  }

  /** Whether one more payload has no room: the spill's bound, or without a spill the window's. */
  full(windowSize: number): boolean {
    return this.spill ? this.spill.store.full : this.live.size >= windowSize;
  }

  /** Whether any payload (in the window or spilled) is owed to the session. */
  owes(sessionId: string): boolean {
    for (const entry of this.live.values()) if (entry.sessionId === sessionId) return true;
    return this.spill?.store.owes(sessionId) ?? false;
  }

  /** Whether an open (no session yet) is queued for the dedup key, in the window or spilled. */
  hasOpen(key: string): boolean {
    for (const entry of this.live.values())
      if (entry.sessionId === undefined && entry.binding?.key === key) return true;
    return this.spill?.store.hasOpen(key) ?? false;
  }

  /**
   * Records a payload queued (or changed: its session now exists). A new one goes behind the
   * spilled ones when the window is full or anything is spilled already.
   */
  put(entry: PendingInject): void {
    const spill = this.spill;
    if (spill && !this.live.has(entry.id) && (spill.store.size > 0 || this.live.size >= spill.windowSize)) {
      spill.store.push(entry);
      return;
    }
    this.live.set(entry.id, entry);
    this.write({ op: "put", entry: { ...entry, attempts: 0 } });
  }

  remove(id: string): void {
    if (!this.live.delete(id)) return;
    this.write({ op: "remove", id });
    this.refill();
    if (this.lines > 2 * this.live.size + COMPACT_SLACK) this.compact();
  }

  /** Brings spilled payloads into the window, oldest first, while it has room. */
  private refill(): void {
    const spill = this.spill;
    if (!spill) return;
    while (this.live.size < spill.windowSize) {
      const oldest = spill.store.oldest();
      if (!oldest) return;
      // Journaled before the row goes: a crash between finds it twice under one id, never lost.
      this.live.set(oldest.entry.id, oldest.entry);
      this.write({ op: "put", entry: oldest.entry });
      spill.store.forget(oldest.seq);
    }
  }

  /** Compacts (the file then lists exactly what is still owed) and closes. */
  close(): void {
    if (this.descriptor === undefined) return;
    try {
      this.compact();
    } catch (error) {
      this.logger.error(
        `delivery: cannot compact ${this.path}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    this.release();
  }

  private release(): void {
    if (this.descriptor !== undefined) closeSync(this.descriptor);
    this.descriptor = undefined;
  }

  private replay(text: string): void {
    let skipped = 0;
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      let parsed: JournalLine;
      try {
        parsed = JSON.parse(line) as JournalLine;
      } catch {
        skipped++;
        continue;
      }
      if (parsed.op === "put" && typeof parsed.entry?.id === "string")
        this.live.set(parsed.entry.id, { ...parsed.entry, attempts: 0 });
      else if (parsed.op === "remove") this.live.delete(parsed.id);
    }
    if (skipped > 0)
      this.logger.warn(`delivery: ${this.path}: skipped ${skipped} unreadable line(s) (a write cut short)`);
    if (this.live.size > 0)
      this.logger.info(`delivery: ${this.live.size} pending inject(s) restored from ${this.path}; re-sending`);
  }

  /** Rewrites the file with the live entries only (atomic: a temporary file renamed over it). */
  private compact(): void {
    if (!this.path) return;
    this.release();
    const temporary = `${this.path}.tmp`;
    const text = [...this.live.values()]
      .map((entry) => `${JSON.stringify({ op: "put", entry: { ...entry, attempts: 0 } })}\n`)
      .join("");
    writeFileSync(temporary, text, { mode: PRIVATE_FILE_MODE });
    ensurePrivateFile(temporary);
    renameSync(temporary, this.path);
    this.lines = this.live.size;
    this.descriptor = openSync(this.path, "a", PRIVATE_FILE_MODE);
  }

  private write(line: JournalLine): void {
    if (!this.path || this.descriptor === undefined) return;
    try {
      writeSync(this.descriptor, `${JSON.stringify(line)}\n`);
      this.lines++;
    } catch (error) {
      this.logger.error(
        `delivery: cannot write ${this.path}: ${error instanceof Error ? error.message : String(error)}; pending injects are kept in memory only`,
      );
    }
  }
}
