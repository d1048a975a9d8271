/**
 * The peer hub's state file (`--attach-peer-state-file`): JSON Lines, one PeerRecord per line
 * (owner and registration id included, which is why the file is mode 0600). Reading: a missing
 * file is an empty registry; a line that is not a valid record is skipped with a warning naming
 * its line number and the reason, never its content (it holds registration ids); a file that
 * cannot be read (a directory in its place, a path under a regular file, no permission) is an
 * error. Writing is atomic: a fresh temp file in the same directory, fsync, rename over the
 * target. It is the snapshot of peer-journal.ts, which appends the changes in between. Owns no
 * registry rules (core/peer-registry.ts does).
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import * as v from "valibot";
import type { PeerRecord } from "../../core/peer-registry.ts";
import { type Result, err, ok } from "../../core/result.ts";

export const STATE_FILE_MODE = 0o600;

export const RECORD_SCHEMA = v.object({
  registration_id: v.string(),
  name: v.string(),
  endpoint: v.string(),
  labels: v.pipe(
    v.unknown(),
    v.check(
      (labels) => typeof labels === "object" && labels !== null && !Array.isArray(labels),
      "must be an object of string to string",
    ),
    v.record(v.string(), v.string()),
  ),
  heartbeat_ttl_sec: v.number(),
  owner: v.string(),
  registered_at: v.string(),
  expires_at: v.string(),
});

export interface StateFileContents {
  records: PeerRecord[];
  /** One message per skipped line. */
  warnings: string[];
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Parse the lines of a state file; blank lines are ignored. */
export function parseStateLines(text: string, path: string): StateFileContents {
  const records: PeerRecord[] = [];
  const warnings: string[] = [];
  text.split("\n").forEach((line, index) => {
    if (line.trim() === "") return;
    const where = `peer state file ${path} line ${index + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      warnings.push(`${where} skipped: not JSON`);
      return;
    }
    const parsed = v.safeParse(RECORD_SCHEMA, value);
    if (!parsed.success) {
      const issue = parsed.issues[0];
      const field = issue ? v.getDotPath(issue) : null;
      warnings.push(`${where} skipped: ${field ? `field ${field}: ` : ""}${issue?.message ?? "not a peer record"}`);
      return;
    }
    records.push(parsed.output);
  });
  return { records, warnings };
}

/** Read the state file; a missing file is empty, any other read failure is an error. */
export function readStateFile(path: string): Result<StateFileContents, string> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return ok({ records: [], warnings: [] });
    return err(`peer state file ${path} cannot be read: ${describe(error)}`);
  }
  return ok(parseStateLines(text, path));
}

let tempCounter = 0;

/** Replace the state file atomically with these records, mode 0600; returns its size. Throws on failure. */
export function writeStateFile(path: string, records: readonly PeerRecord[]): number {
  const text = records.map((record) => `${JSON.stringify(record)}\n`).join("");
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${++tempCounter}.tmp`);
  let fd: number | undefined;
  try {
    // A state file in a directory not made yet (`.agents/state` on a fresh checkout) is made.
    mkdirSync(dirname(path), { recursive: true });
    // "wx": a fresh file, so the mode given here is the mode it gets.
    fd = openSync(temp, "wx", STATE_FILE_MODE);
    writeSync(fd, text);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temp, path);
    return Buffer.byteLength(text);
  } catch (error) {
    try {
      if (fd !== undefined) closeSync(fd);
      rmSync(temp, { force: true });
    } catch {
      // the write already failed; that is the error worth reporting
    }
    throw new Error(`peer state file ${path} cannot be written: ${describe(error)}`);
  }
}
