/**
 * Reads merged event rows out of `event_blocks` (D150, D152): one JSON.parse per block, and the
 * last parsed block kept, because a paged replay starts each page inside the block the previous
 * page ended in. Blocks never change once committed (a deleted session's pk is never reused, and
 * a merge that rolled back was never read), so the kept block stays valid. Reads only.
 */
import type { Statement } from "bun:sqlite";
import type { CommittedRow, SessionEvent } from "../../core/events.ts";
import { decodeBlock } from "./log-codec.ts";

interface ParsedBlock {
  pk: number;
  first: number;
  last: number;
  events: SessionEvent[];
}

export class BlockReader {
  private lastBlock: ParsedBlock | undefined;

  /** `readBlocks`: (pk, afterSeq, uptoSeq) -> [first_seq, last_seq, body] of every block in range. */
  constructor(
    private readonly readBlocks: Statement<unknown, [number, number, number]>,
    private readonly path: string,
  ) {}

  /**
   * Rows lo < seq <= hi of session `pk`, ascending. A block whose array does not hold
   * last_seq - first_seq + 1 events is refused (the file is inconsistent).
   */
  read(pk: number, lo: number, hi: number): CommittedRow[] {
    const rows: CommittedRow[] = [];
    const cached = this.lastBlock;
    if (cached !== undefined && cached.pk === pk && cached.first <= lo + 1 && lo < cached.last) {
      lo = pushRows(rows, cached.events, cached.first, lo, Math.min(cached.last, hi));
      if (lo >= hi) return rows;
    }
    for (const [first, last, body] of this.readBlocks.values(pk, lo, hi) as [number, number, string][]) {
      const events = decodeBlock(body, first, last, pk, this.path);
      pushRows(rows, events, first, Math.max(lo, first - 1), Math.min(last, hi));
      this.lastBlock = { pk, first, last, events };
    }
    return rows;
  }
}

/** Appends rows after < seq <= to of a block starting at `first`; returns `to`. */
function pushRows(rows: CommittedRow[], events: SessionEvent[], first: number, after: number, to: number): number {
  for (let seq = after + 1; seq <= to; seq++) rows.push({ seq, event: events[seq - first] as SessionEvent });
  return to;
}
