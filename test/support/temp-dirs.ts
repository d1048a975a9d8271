/**
 * The temporary directories of a test run. Every helper that makes one (`tempDir`, `kubeTempDir`)
 * records it with the test file that asked (`Bun.main`); the run's preload
 * (test/support/cleanup-preload.ts) removes a file's directories once the next file starts and the
 * rest when the run ends, so a full run leaves nothing in the temp directory.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const recorded = new Map<string, Set<string>>();

/** Remember `path` (a directory or file under the temp directory) for removal after this test file. */
export function recordTempPath(path: string): string {
  const owner = Bun.main;
  const paths = recorded.get(owner) ?? new Set<string>();
  paths.add(path);
  recorded.set(owner, paths);
  return path;
}

/** A fresh directory under the temp directory, removed after the test file that made it. */
export function makeTempDir(prefix: string): string {
  return recordTempPath(mkdtempSync(join(tmpdir(), prefix)));
}

/** Remove what the test files other than `keepFile` recorded (all of it when `keepFile` is absent). */
export function removeTempPaths(keepFile?: string): void {
  for (const [owner, paths] of recorded) {
    if (owner === keepFile) continue;
    for (const path of paths) rmSync(path, { recursive: true, force: true });
    recorded.delete(owner);
  }
}
