/**
 * In-memory index of the sqlite store: session key -> row pk and the session's committed head
 * seq, filled lazily from the database. Valid because one daemon holds the file (D18) and all
 * writes pass through one writer. Changes made inside a write transaction are journaled so a
 * rolled-back batch leaves the index exactly as it was. Never writes to the database.
 */
import type { SessionKey } from "../../core/session-key.ts";
import type { Statements } from "./statements.ts";

export interface SessionEntry {
  readonly pk: number;
  /** Committed head seq; -1 until loaded with max(seq). */
  head: number;
}

const NOT_LOADED = -1;

export class SessionIndex {
  private readonly entries = new Map<string, SessionEntry>();
  private readonly savedHeads = new Map<SessionEntry, number>();
  private readonly savedKeys = new Map<string, SessionEntry | undefined>();

  constructor(private readonly st: Statements) {}

  lookup(key: SessionKey): SessionEntry | undefined {
    const k = mapKey(key);
    const hit = this.entries.get(k);
    if (hit !== undefined) return hit;
    const row = this.st.sessionPk.get(key.app, key.id);
    if (row === null) return undefined;
    const entry: SessionEntry = { pk: row.pk, head: NOT_LOADED };
    this.entries.set(k, entry);
    return entry;
  }

  head(entry: SessionEntry): number {
    if (entry.head === NOT_LOADED) entry.head = this.st.maxSeq.get(entry.pk)?.head ?? 0;
    return entry.head;
  }

  /** Inside a transaction: the session's head becomes `head` if the transaction commits. */
  advance(entry: SessionEntry, head: number): void {
    if (!this.savedHeads.has(entry)) this.savedHeads.set(entry, entry.head);
    entry.head = head;
  }

  /** Inside a transaction: a session row was inserted. */
  add(key: SessionKey, pk: number): void {
    this.setKey(mapKey(key), { pk, head: 0 });
  }

  /** Inside a transaction: a session row was deleted. */
  remove(key: SessionKey): void {
    this.setKey(mapKey(key), undefined);
  }

  commit(): void {
    this.savedHeads.clear();
    this.savedKeys.clear();
  }

  rollback(): void {
    for (const [entry, head] of this.savedHeads) entry.head = head;
    for (const [k, entry] of this.savedKeys) {
      if (entry === undefined) this.entries.delete(k);
      else this.entries.set(k, entry);
    }
    this.commit();
  }

  private setKey(k: string, entry: SessionEntry | undefined): void {
    if (!this.savedKeys.has(k)) this.savedKeys.set(k, this.entries.get(k));
    if (entry === undefined) this.entries.delete(k);
    else this.entries.set(k, entry);
  }
}

function mapKey(key: SessionKey): string {
  return `${key.app}\u0000${key.id}`;
}
