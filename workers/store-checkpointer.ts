/**
 * Store checkpointer worker entrypoint: runs the sqlite store's WAL checkpoints off the main thread.
 * Thin by design: the protocol and the work are in src/store/sqlite/checkpoint-worker.ts.
 */
import { serveCheckpoints, type CheckpointerPort } from "../src/store/sqlite/checkpoint-worker.ts";

declare const self: Worker;

serveCheckpoints(self as unknown as CheckpointerPort, () => process.exit(0));
