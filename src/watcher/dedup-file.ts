/**
 * `--dedup-persist`: the dedup cache on disk (docs/watcher-pipeline.md#dedup). Pretty-printed JSON
 * written atomically (PATH.tmp, mode 0600, renamed over PATH; a missing directory is created 0700).
 * A missing file starts empty; a corrupt one is logged and left alone until the next snapshot
 * overwrites it.
 */
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import type { Logger } from "../telemetry/logger.ts";
import type { DedupCache } from "./core/dedup-cache.ts";
import { PRIVATE_FILE_MODE, ensurePrivateDirectoryFor } from "../fs/private-files.ts";

export function loadDedupFile(path: string, cache: DedupCache, logger: Logger): number {
  if (!existsSync(path)) return 0;
  try {
    const loaded = cache.restore(JSON.parse(readFileSync(path, "utf8")));
    logger.info(`dedup: restored ${loaded} entries from ${path}`);
    return loaded;
  } catch (error) {
    logger.error(
      `dedup: ${path} is unreadable, starting empty: ${error instanceof Error ? error.message : String(error)}`,
    );
    return 0;
  }
}

export function saveDedupFile(path: string, cache: DedupCache): void {
  ensurePrivateDirectoryFor(path);
  const temporary = `${path}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(cache.snapshot(), null, 2)}\n`, { mode: PRIVATE_FILE_MODE });
  chmodSync(temporary, PRIVATE_FILE_MODE);
  renameSync(temporary, path);
}
