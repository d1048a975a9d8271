/**
 * In-memory mirror of the `journal` table: per session, the committed event rows not yet merged
 * into the clustered `events` table (seqs mergedHead+1 .. head, contiguous) with their journal
 * ids, so reads of recent rows never touch SQLite. Valid because one daemon holds the file (D18)
 * and every write passes through one writer. Inside a write transaction changes are only staged;
 * `commit` applies them and `rollback` drops them, so a refused batch leaves memory exactly as it
 * was. Owns no SQL besides loading itself at open.
 */
import type { CommittedRow, SessionEvent } from "../../core/events.ts";
import { SparError } from "../../core/errors.ts";
import type { Statements } from "./statements.ts";

export interface Tail {
  /** Committed rows not yet merged: rows[i].seq === rows[0].seq + i. Shared: never mutate one. */
  readonly rows: CommittedRow[];
  /** The journal row id of rows[i], ascending. */
  readonly ids: number[];
}

type Staged = { pk: number; rows: CommittedRow[]; firstId: number } | { pk: number; rows: undefined; firstId: 0 };

export class JournalMemory {
  private readonly tails = new Map<number, Tail>();
  private staged: Staged[] = [];
  private rowCount = 0;
  private nextId = 1;
  private stagedNextId = 1;

  /** Rows in the journal table (committed). */
  get size(): number {
    return this.rowCount;
  }

  /** Highest journal id committed so far (0 before the first). */
  get lastId(): number {
    return this.nextId - 1;
  }

  /** The session's unmerged rows; undefined when all of them are in `events`. */
  tail(pk: number): Tail | undefined {
    return this.tails.get(pk);
  }

  /** Highest committed seq of the session if it has unmerged rows. */
  lastSeq(pk: number): number | undefined {
    const rows = this.tails.get(pk)?.rows;
    return rows === undefined ? undefined : (rows[rows.length - 1] as CommittedRow).seq;
  }

  // ---- inside a write transaction ---------------------------------------------------------

  /** Reserves `n` consecutive journal ids for rows about to be inserted; returns the first. */
  allocate(n: number): number {
    const first = this.stagedNextId;
    this.stagedNextId += n;
    return first;
  }

  /** Rows inserted with ids firstId.. for session `pk`; visible after commit. */
  stageAppend(pk: number, rows: CommittedRow[], firstId: number): void {
    this.staged.push({ pk, rows, firstId });
  }

  /** The session's journal rows were deleted with it. */
  stageDrop(pk: number): void {
    this.staged.push({ pk, rows: undefined, firstId: 0 });
  }

  commit(): void {
    for (const change of this.staged) {
      if (change.rows === undefined) {
        const dropped = this.tails.get(change.pk);
        if (dropped !== undefined) this.rowCount -= dropped.rows.length;
        this.tails.delete(change.pk);
        continue;
      }
      let tail = this.tails.get(change.pk);
      if (tail === undefined) {
        tail = { rows: [], ids: [] };
        this.tails.set(change.pk, tail);
      }
      for (let i = 0; i < change.rows.length; i++) {
        tail.rows.push(change.rows[i] as CommittedRow);
        tail.ids.push(change.firstId + i);
      }
      this.rowCount += change.rows.length;
    }
    this.staged = [];
    this.nextId = this.stagedNextId;
  }

  rollback(): void {
    this.staged = [];
    this.stagedNextId = this.nextId;
  }

  // ---- merging ----------------------------------------------------------------------------

  /**
   * The id bound of the next merge slice: every journal id <= it, at most `maxRows` rows, oldest
   * first. Undefined when the journal is empty.
   */
  sliceEnd(maxRows: number): number | undefined {
    if (this.rowCount === 0) return undefined;
    let oldest = Number.MAX_SAFE_INTEGER;
    for (const tail of this.tails.values()) {
      const id = tail.ids[0] as number;
      if (id < oldest) oldest = id;
    }
    return Math.min(oldest + Math.max(1, maxRows) - 1, this.nextId - 1);
  }

  /** Rows with journal id <= `hi`. */
  countThrough(hi: number): number {
    let n = 0;
    for (const tail of this.tails.values()) {
      let k = 0;
      while (k < tail.ids.length && (tail.ids[k] as number) <= hi) k++;
      n += k;
    }
    return n;
  }

  /** After a merge of every journal id <= `hi` committed: forget those rows. */
  dropThrough(hi: number): void {
    let dropped = 0;
    for (const [pk, tail] of this.tails) {
      let k = 0;
      while (k < tail.ids.length && (tail.ids[k] as number) <= hi) k++;
      if (k === 0) continue;
      dropped += k;
      if (k === tail.ids.length) {
        this.tails.delete(pk);
      } else {
        tail.rows.splice(0, k);
        tail.ids.splice(0, k);
      }
    }
    this.rowCount -= dropped;
  }

  // ---- open -------------------------------------------------------------------------------

  /**
   * Loads every row a previous run left in the journal (a crash, or a refused merge) and checks
   * each session's rows continue its `events` contiguously; refuses the file otherwise.
   */
  static load(st: Statements, path: string): JournalMemory {
    const memory = new JournalMemory();
    const raw = st.loadJournal.values() as [number, number, number, string][];
    for (const [id, pk, seq, payload] of raw) {
      let tail = memory.tails.get(pk);
      if (tail === undefined) {
        const merged = st.maxSeq.get(pk)?.head ?? 0;
        if (seq !== merged + 1) throw inconsistent(path, pk, seq, merged);
        tail = { rows: [], ids: [] };
        memory.tails.set(pk, tail);
      } else {
        const last = (tail.rows[tail.rows.length - 1] as CommittedRow).seq;
        if (seq !== last + 1) throw inconsistent(path, pk, seq, last);
      }
      tail.rows.push({ seq, event: JSON.parse(payload) as SessionEvent });
      tail.ids.push(id);
      memory.rowCount++;
      memory.nextId = id + 1;
    }
    memory.stagedNextId = memory.nextId;
    return memory;
  }
}

function inconsistent(path: string, pk: number, seq: number, previous: number): SparError {
  return new SparError(
    "unavailable",
    `session store ${path} is inconsistent: journal row seq ${seq} of session #${pk} does not follow seq ${previous}`,
  );
}
