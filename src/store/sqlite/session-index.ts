/**
 * In-memory index of the sqlite store: session key -> row pk and the session's committed head
 * seq, filled lazily from the database. Valid because one daemon holds the file (D18) and all
 * writes pass through one writer. Changes made inside a write transaction are recorded so a
 * rolled-back batch leaves the index exactly as it was. Never writes to the database.
 */
import type { SessionKey } from "../../core/session-key.ts";
import type { JournalMemory } from "./journal.ts";
import type { Statements } from "./statements.ts";

export interface SessionEntry {
  readonly pk: number;
  /** Committed head seq; -1 until loaded (from the journal, else max(seq) of `events`). */
  head: number;
  /** The head before the running transaction first advanced it; NOT_SAVED otherwise. */
  savedHead: number;
}

const NOT_LOADED = -1;
const NOT_SAVED = -2;

export class SessionIndex {
  /** app -> id -> entry: two lookups on the caller's strings, no key concatenation per call. */
  private readonly entries = new Map<string, Map<string, SessionEntry>>();
  private readonly advanced: SessionEntry[] = [];
  private readonly savedKeys: { app: string; id: string; entry: SessionEntry | undefined }[] = [];

  constructor(
    private readonly st: Statements,
    private readonly journal: JournalMemory,
  ) {}

  lookup(key: SessionKey): SessionEntry | undefined {
    const hit = this.entries.get(key.app)?.get(key.id);
    if (hit !== undefined) return hit;
    const row = this.st.sessionPk.get(key.app, key.id);
    if (row === null) return undefined;
    const entry = newEntry(row.pk, NOT_LOADED);
    this.put(key.app, key.id, entry);
    return entry;
  }

  head(entry: SessionEntry): number {
    if (entry.head === NOT_LOADED) {
      entry.head = this.journal.lastSeq(entry.pk) ?? this.st.maxSeq.get(entry.pk)?.head ?? 0;
    }
    return entry.head;
  }

  /** Inside a transaction: the session's head becomes `head` if the transaction commits. */
  advance(entry: SessionEntry, head: number): void {
    if (entry.savedHead === NOT_SAVED) {
      entry.savedHead = entry.head;
      this.advanced.push(entry);
    }
    entry.head = head;
  }

  /** Inside a transaction: a session row was inserted. */
  add(key: SessionKey, pk: number): void {
    this.setKey(key, newEntry(pk, 0));
  }

  /** Inside a transaction: a session row was deleted. */
  remove(key: SessionKey): void {
    this.setKey(key, undefined);
  }

  commit(): void {
    for (const entry of this.advanced) entry.savedHead = NOT_SAVED;
    this.advanced.length = 0;
    this.savedKeys.length = 0;
  }

  rollback(): void {
    for (const entry of this.advanced) entry.head = entry.savedHead;
    // Newest first, so a key changed twice ends at its value from before the transaction.
    for (let i = this.savedKeys.length - 1; i >= 0; i--) {
      const saved = this.savedKeys[i] as { app: string; id: string; entry: SessionEntry | undefined };
      this.put(saved.app, saved.id, saved.entry);
    }
    this.commit();
  }

  private setKey(key: SessionKey, entry: SessionEntry | undefined): void {
    this.savedKeys.push({ app: key.app, id: key.id, entry: this.entries.get(key.app)?.get(key.id) });
    this.put(key.app, key.id, entry);
  }

  private put(app: string, id: string, entry: SessionEntry | undefined): void {
    let byId = this.entries.get(app);
    if (entry === undefined) {
      byId?.delete(id);
      return;
    }
    if (byId === undefined) {
      byId = new Map();
      this.entries.set(app, byId);
    }
    byId.set(id, entry);
  }
}

function newEntry(pk: number, head: number): SessionEntry {
  return { pk, head, savedHead: NOT_SAVED };
}
