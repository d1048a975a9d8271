/**
 * The peer hub's state on disk, written incrementally: the snapshot (`--attach-peer-state-file`,
 * JSON Lines of PeerRecords, as peer-state-file.ts reads and writes it) plus a journal beside it
 * (`<state file>.journal`, mode 0600) to which each change appends one line:
 *   {"op":"put","record":{...}}              a registration, whole (register, re-register)
 *   {"op":"beat","name":"...","expires_at":"..."}   a heartbeat's new lease
 *   {"op":"del","name":"..."}               a deregistration
 * Lapsed leases need no line: a record carries its expiry and loading drops it. When the journal
 * has grown past the snapshot's size (and a floor), `compact` writes a fresh snapshot atomically
 * (temp file, fsync, rename) and empties the journal, so the bytes written stay proportional to
 * the changes made (the whole file was rewritten on every change before: quadratic).
 *
 * Every op sets state absolutely, so replaying the journal over the snapshot it was compacted
 * into (a crash between the rename and the truncation) yields the same state. A journal line that
 * does not parse (a write torn by a crash) is skipped with a warning naming its line number.
 * Each append opens the journal by its path (so a state directory moved or removed under the
 * daemon is an error, not writes into an unlinked file) and is not fsynced: a power cut may lose
 * the last changes, which peers redo by heartbeating or registering again; compactions are
 * fsynced. Owns no registry rules.
 */
import { closeSync, mkdirSync, openSync, readFileSync, statSync, truncateSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import * as v from "valibot";
import type { PeerRecord } from "../../core/peer-registry.ts";
import { type Result, err, ok } from "../../core/result.ts";
import { RECORD_SCHEMA, STATE_FILE_MODE, readStateFile, writeStateFile } from "./peer-state-file.ts";

export type JournalOp =
  | { op: "put"; record: PeerRecord }
  | { op: "beat"; name: string; expires_at: string }
  | { op: "del"; name: string };

const OP_SCHEMA = v.variant("op", [
  v.object({ op: v.literal("put"), record: RECORD_SCHEMA }),
  v.object({ op: v.literal("beat"), name: v.string(), expires_at: v.string() }),
  v.object({ op: v.literal("del"), name: v.string() }),
]);

/** A journal smaller than this is never compacted (a few registrations' worth). */
export const MIN_COMPACT_BYTES = 64 * 1024;

export interface LoadedState {
  journal: PeerJournal;
  /** The state: the snapshot with the journal applied, one record per name. */
  records: PeerRecord[];
  warnings: string[];
}

export function journalPathOf(statePath: string): string {
  return `${statePath}.journal`;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Apply the journal's lines over `byName`; returns one warning per line skipped. */
function replay(text: string, path: string, byName: Map<string, PeerRecord>): string[] {
  const warnings: string[] = [];
  text.split("\n").forEach((line, index) => {
    if (line.trim() === "") return;
    let parsed: v.SafeParseResult<typeof OP_SCHEMA>;
    try {
      parsed = v.safeParse(OP_SCHEMA, JSON.parse(line));
    } catch {
      warnings.push(`peer journal ${path} line ${index + 1} skipped: not JSON`);
      return;
    }
    if (!parsed.success) {
      warnings.push(`peer journal ${path} line ${index + 1} skipped: not a journal entry`);
      return;
    }
    const entry = parsed.output;
    if (entry.op === "put") byName.set(entry.record.name, entry.record);
    else if (entry.op === "del") byName.delete(entry.name);
    else {
      const held = byName.get(entry.name);
      if (held) byName.set(entry.name, { ...held, expires_at: entry.expires_at });
    }
  });
  return warnings;
}

/** The state on disk: the snapshot with the journal applied (read only; nothing is created). */
export function readPeerState(statePath: string): Result<{ records: PeerRecord[]; warnings: string[] }, string> {
  const snapshot = readStateFile(statePath);
  if (!snapshot.ok) return snapshot;
  const byName = new Map<string, PeerRecord>();
  for (const record of snapshot.value.records) byName.set(record.name, record);
  const path = journalPathOf(statePath);
  let text = "";
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT")
      return err(`peer state file ${statePath} cannot be read: its journal ${path}: ${describe(error)}`);
  }
  const warnings = [...snapshot.value.warnings, ...replay(text, path, byName)];
  return ok({ records: [...byName.values()], warnings });
}

export class PeerJournal {
  readonly #statePath: string;
  readonly #path: string;
  #bytes: number;
  #snapshotBytes = 0;

  private constructor(statePath: string, bytes: number) {
    this.#statePath = statePath;
    this.#path = journalPathOf(statePath);
    this.#bytes = bytes;
  }

  /** Read the state (readPeerState) and take the journal over for appending. */
  static open(statePath: string): Result<LoadedState, string> {
    const state = readPeerState(statePath);
    if (!state.ok) return state;
    const bytes = statSync(journalPathOf(statePath), { throwIfNoEntry: false })?.size ?? 0;
    return ok({ journal: new PeerJournal(statePath, bytes), ...state.value });
  }

  /** Bytes in the journal now. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Append one change (the journal is created 0600). Throws, naming the file, when it cannot be written. */
  append(op: JournalOp): void {
    const line = Buffer.from(`${JSON.stringify(op)}\n`);
    let fd: number | undefined;
    try {
      fd = openSync(this.#path, "a", STATE_FILE_MODE);
      writeSync(fd, line);
    } catch (error) {
      throw new Error(
        `peer state file ${this.#statePath} cannot be written: its journal ${this.#path}: ${describe(error)}`,
      );
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    this.#bytes += line.byteLength;
  }

  /** The journal has grown past the last snapshot (and the floor): time to compact. */
  get due(): boolean {
    return this.#bytes >= Math.max(MIN_COMPACT_BYTES, this.#snapshotBytes);
  }

  /** Write `records` as the new snapshot (atomic, 0600), then empty the journal. Throws on failure. */
  compact(records: readonly PeerRecord[]): void {
    this.#snapshotBytes = writeStateFile(this.#statePath, records);
    try {
      mkdirSync(dirname(this.#path), { recursive: true });
      closeSync(openSync(this.#path, "a", STATE_FILE_MODE));
      truncateSync(this.#path, 0);
    } catch (error) {
      throw new Error(
        `peer state file ${this.#statePath} cannot be written: its journal ${this.#path} cannot be emptied: ${describe(error)}`,
      );
    }
    this.#bytes = 0;
  }
}
