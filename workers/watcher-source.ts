/**
 * Watcher source worker entrypoint: runs one of the watcher's sources off the main thread
 * (src/watcher/sources/source-worker.ts, D413). Thin by design.
 */
import { serveSourceWorker } from "../src/watcher/sources/source-worker.ts";

declare const self: Worker;

serveSourceWorker(self);
