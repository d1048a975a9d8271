/**
 * Writing a file only its owner may read (the decision export's `--out`): the text goes to a new
 * file created 0600 with O_EXCL beside the target, flushed, then renamed over it, so the target
 * never exists with wider bits (whatever the umask, whatever an earlier file's mode) and a symlink
 * at the target is replaced, never written through.
 */
import { closeSync, fchmodSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { PRIVATE_FILE_MODE } from "../../store/sqlite/private-files.ts";

export function writePrivateFile(path: string, text: string): void {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
  const descriptor = openSync(temporary, "wx", PRIVATE_FILE_MODE);
  try {
    fchmodSync(descriptor, PRIVATE_FILE_MODE);
    writeSync(descriptor, text);
    fsyncSync(descriptor);
  } catch (error) {
    closeSync(descriptor);
    rmSync(temporary, { force: true });
    throw error;
  }
  closeSync(descriptor);
  try {
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
