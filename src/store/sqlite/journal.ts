/**
 * In-memory mirror of the `log` table (schema v4, D150): per session, the committed event rows
 * not yet merged into `event_blocks` (seqs mergedHead+1 .. head, contiguous), each with its JSON
 * as committed and the id of the log row (group commit) that holds it, so reads of recent rows
 * never touch SQLite and a merge re-encodes nothing. Valid because one daemon holds the file (D18)
 * and every write passes through one writer. Inside a write transaction changes are only staged;
 * `commit` applies them and `rollback` drops them, so a refused batch leaves memory exactly as it
 * was. Builds the log row (`logRow`) and the merge's blocks (`blocksThrough`) and loads the log
 * back (`load`) through log-codec.ts; runs no SQL besides loading itself at open.
 */
import type { CommittedRow } from "../../core/events.ts";
import {
  decodeLogBody,
  encodeBlockBody,
  encodeLogBody,
  encodeSegment,
  inconsistent,
  segmentRows,
} from "./log-codec.ts";
import type { Statements } from "./statements.ts";

export interface Tail {
  /** Committed rows not yet merged: rows[i].seq === rows[0].seq + i. Shared: never mutate one. */
  readonly rows: CommittedRow[];
  /** JSON.stringify(rows[i].event) as committed. */
  readonly payloads: string[];
  /** The log row id holding rows[i], ascending (rows of one group commit share it). */
  readonly ids: number[];
}

/** One `event_blocks` row: [session_pk, first_seq, last_seq, body]. */
export type Block = [number, number, number, string];

type Staged =
  | { pk: number; rows: CommittedRow[]; payloads: string[] }
  | { pk: number; rows: undefined; payloads: undefined };

/** A committed log row: its id and how many event rows it was written with. */
interface Batch {
  id: number;
  rows: number;
}

export class JournalMemory {
  private readonly tails = new Map<number, Tail>();
  /** Log rows in the table, oldest first. */
  private batches: Batch[] = [];
  private staged: Staged[] = [];
  /** The log segment of each append of the running transaction (log-codec.ts). */
  private stagedSegments: string[] = [];
  private stagedRows = 0;
  private rowCount = 0;
  private nextId = 1;

  /** Event rows in the log table of sessions that still exist (committed). */
  get size(): number {
    return this.rowCount;
  }

  /** Rows in the log table (committed), those holding only rows of deleted sessions included. */
  get logRows(): number {
    return this.batches.length;
  }

  /** Highest log row id committed so far (0 before the first). */
  get lastId(): number {
    return this.nextId - 1;
  }

  /** The session's unmerged rows; undefined when all of them are in `event_blocks`. */
  tail(pk: number): Tail | undefined {
    return this.tails.get(pk);
  }

  /** Highest committed seq of the session if it has unmerged rows. */
  lastSeq(pk: number): number | undefined {
    const rows = this.tails.get(pk)?.rows;
    return rows === undefined ? undefined : (rows[rows.length - 1] as CommittedRow).seq;
  }

  // ---- inside a write transaction ---------------------------------------------------------

  /** Rows appended to session `pk` by this transaction (their JSON in `payloads`); visible after commit. */
  stageAppend(pk: number, rows: CommittedRow[], payloads: string[]): void {
    this.staged.push({ pk, rows, payloads });
    this.stagedSegments.push(encodeSegment(pk, (rows[0] as CommittedRow).seq, payloads));
    this.stagedRows += rows.length;
  }

  /** The session was deleted: its unmerged rows leave memory (its log rows are skipped from now on). */
  stageDrop(pk: number): void {
    this.staged.push({ pk, rows: undefined, payloads: undefined });
  }

  /** The one log row this transaction must insert ([id, body]), or undefined when it appended nothing. */
  logRow(): [number, string] | undefined {
    if (this.stagedSegments.length === 0) return undefined;
    return [this.nextId, encodeLogBody(this.stagedSegments)];
  }

  commit(): void {
    const id = this.nextId;
    for (const change of this.staged) {
      if (change.rows === undefined) {
        const dropped = this.tails.get(change.pk);
        if (dropped !== undefined) this.rowCount -= dropped.rows.length;
        this.tails.delete(change.pk);
        continue;
      }
      this.push(change.pk, change.rows, change.payloads, id);
    }
    if (this.stagedSegments.length > 0) {
      this.batches.push({ id, rows: this.stagedRows });
      this.nextId++;
    }
    this.rollback();
  }

  rollback(): void {
    this.staged = [];
    this.stagedSegments = [];
    this.stagedRows = 0;
  }

  private push(pk: number, rows: CommittedRow[], payloads: string[], id: number): void {
    let tail = this.tails.get(pk);
    if (tail === undefined) {
      tail = { rows: [], payloads: [], ids: [] };
      this.tails.set(pk, tail);
    }
    for (let i = 0; i < rows.length; i++) {
      tail.rows.push(rows[i] as CommittedRow);
      tail.payloads.push(payloads[i] as string);
      tail.ids.push(id);
    }
    this.rowCount += rows.length;
  }

  // ---- merging ----------------------------------------------------------------------------

  /**
   * The id bound of the next merge slice: the oldest log rows holding at most `maxRows` event
   * rows (at least one log row). Undefined when the log table is empty.
   */
  sliceEnd(maxRows: number): number | undefined {
    const first = this.batches[0];
    if (first === undefined) return undefined;
    let end = first.id;
    let rows = first.rows;
    for (let i = 1; i < this.batches.length; i++) {
      const batch = this.batches[i] as Batch;
      rows += batch.rows;
      if (rows > maxRows) break;
      end = batch.id;
    }
    return end;
  }

  /** Log rows with id <= `hi`. */
  countThrough(hi: number): number {
    let n = 0;
    while (n < this.batches.length && (this.batches[n] as Batch).id <= hi) n++;
    return n;
  }

  /** The event rows of log rows with id <= `hi`, per session in blocks of at most `blockRows`. */
  blocksThrough(hi: number, blockRows: number): Block[] {
    const blocks: Block[] = [];
    for (const [pk, tail] of this.tails) {
      const k = rowsThrough(tail, hi);
      for (let a = 0; a < k; a += blockRows) {
        const b = Math.min(k, a + blockRows);
        const first = (tail.rows[a] as CommittedRow).seq;
        blocks.push([pk, first, first + b - a - 1, encodeBlockBody(tail.payloads.slice(a, b))]);
      }
    }
    return blocks;
  }

  /** After a merge of every log row with id <= `hi` committed: forget those rows. */
  dropThrough(hi: number): void {
    let dropped = 0;
    for (const [pk, tail] of this.tails) {
      const k = rowsThrough(tail, hi);
      if (k === 0) continue;
      dropped += k;
      if (k === tail.ids.length) {
        this.tails.delete(pk);
      } else {
        tail.rows.splice(0, k);
        tail.payloads.splice(0, k);
        tail.ids.splice(0, k);
      }
    }
    this.rowCount -= dropped;
    this.batches.splice(0, this.countThrough(hi));
  }

  // ---- open -------------------------------------------------------------------------------

  /**
   * Loads every row a previous run left in the log (a crash, or a refused merge), skipping rows
   * of deleted sessions, and checks each session's rows continue its blocks contiguously;
   * refuses the file otherwise.
   */
  static load(st: Statements, path: string): JournalMemory {
    const memory = new JournalMemory();
    const live = new Map<number, boolean>();
    for (const [id, body] of st.loadLog.values() as [number, string][]) {
      let rows = 0;
      for (const segment of decodeLogBody(body, id, path)) {
        const [pk, firstSeq, events] = segment;
        rows += events.length;
        let exists = live.get(pk);
        if (exists === undefined) {
          exists = st.sessionExists.get(pk) !== null;
          live.set(pk, exists);
        }
        if (!exists) continue;
        const previous = memory.lastSeq(pk) ?? st.maxSeq.get(pk)?.head ?? 0;
        if (firstSeq !== previous + 1)
          throw inconsistent(path, `log row ${id}: seq ${firstSeq} of session #${pk} does not follow seq ${previous}`);
        memory.push(
          pk,
          segmentRows(segment),
          events.map((event) => JSON.stringify(event)),
          id,
        );
      }
      memory.batches.push({ id, rows });
      memory.nextId = id + 1;
    }
    return memory;
  }
}

function rowsThrough(tail: Tail, hi: number): number {
  let k = 0;
  while (k < tail.ids.length && (tail.ids[k] as number) <= hi) k++;
  return k;
}
