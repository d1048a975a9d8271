/**
 * The WAL checkpointer's side of the sqlite store, run inside a Worker (workers/store-checkpointer.ts
 * only calls `serveCheckpoints`): its own connection to the store file, on which it runs
 * `PRAGMA wal_checkpoint(PASSIVE)`, so the copy of WAL frames into the database and the fsyncs
 * that go with it never run on the daemon's main thread. A PASSIVE checkpoint never waits and
 * takes no lock a writer needs (but for a µs-long race, see open-db.ts), so the main connection's
 * commits proceed during it.
 *
 * When: every `pollMs` while runs keep finding at least `quietFrames` new frames, every
 * `idlePollMs` otherwise (a checkpoint that finds nothing new costs a few µs); back to back while
 * the WAL holds `eagerFrames` or more and each run still finds new frames, so that the run a write
 * hold waits for (checkpointer.ts) is short; and at once when asked (`checkpoint` message).
 *
 * A `checkpoint` request comes from a write hold: the main thread writes nothing until the answer.
 * If the run copies every frame, the worker also restarts the WAL with a no-op write transaction
 * (user_version set to itself: one page-1 frame), or, when the request asks to `truncate` (a
 * scrub after a session was deleted), empties the WAL file with a TRUNCATE checkpoint, so no old
 * frame keeps the deleted text. SQLite restarts the WAL in whichever write finds
 * it fully checkpointed and syncs the new WAL header right there; done here, that fsync (and the
 * journal_size_limit truncation) stays off the main thread, and the main connection's next commit
 * simply appends. It is the only write this connection makes; rows are the main thread's alone.
 *
 * Publishes each run's outcome in a shared Int32Array (the main thread reads it synchronously
 * between commits, even when a stream of microtasks keeps it from handling messages) and answers
 * each `checkpoint` request with a `done` message from the first run that started after it.
 */
import { Database } from "bun:sqlite";

/** Slots of the shared Int32Array the worker publishes into (Atomics.store; read with Atomics.load). */
export const SLOT = {
  /** Checkpoint runs completed. */
  runs: 0,
  /** Frames in the WAL when the last run started (sqlite's `log`). */
  log: 1,
  /** Frames the last run left backfilled (sqlite's `checkpointed`). */
  checkpointed: 2,
  /** Duration of the last run, µs. */
  lastRunUs: 3,
  /** Longest run since open, µs (the WAL restart included). */
  longestRunUs: 4,
  /** Time in runs since open, ms. */
  totalRunMs: 5,
  /** Most frames the WAL held at the start of a run. */
  maxLog: 6,
  /** Runs that failed (an error from SQLite); the worker keeps going. */
  errors: 7,
  /** Runs that copied at least one frame. */
  copying: 8,
  /** WAL restarts done here (at the end of a hold). */
  restarts: 9,
  /** WAL truncations done here (a scrub: a deleted session's text must leave the WAL file). */
  truncations: 10,
} as const;
export const SLOT_COUNT = 11;

export interface OpenMessage {
  type: "open";
  path: string;
  synchronous: "NORMAL" | "FULL";
  /** PRAGMA journal_size_limit, as on the main connection (a restart here truncates the WAL file). */
  walSizeLimitBytes: number;
  pollMs: number;
  idlePollMs: number;
  /** A run that found fewer new frames than this waits idlePollMs for the next. */
  quietFrames: number;
  /** At this many WAL frames or more, run again at once while runs keep finding new frames. */
  eagerFrames: number;
  /** SLOT_COUNT Int32 slots. */
  state: SharedArrayBuffer;
}

/** `truncate`: once every frame is checkpointed, truncate the WAL file to zero bytes (a scrub). */
export type ToCheckpointer = OpenMessage | { type: "checkpoint"; id: number; truncate?: boolean } | { type: "stop" };

export type FromCheckpointer =
  | { type: "ready" }
  /**
   * The first run that started after request `id` (and after every earlier request). `complete`:
   * every frame was checkpointed; `restarted`: and this worker restarted the WAL; `truncated`: by
   * truncating the WAL file to zero bytes (asked with `truncate`).
   */
  | {
      type: "done";
      id: number;
      complete: boolean;
      restarted: boolean;
      truncated: boolean;
      log: number;
      checkpointed: number;
      ms: number;
    }
  | { type: "failed"; message: string }
  | { type: "stopped" };

export interface CheckpointerPort {
  postMessage(message: FromCheckpointer): void;
  onmessage: ((event: MessageEvent) => void) | null;
}

interface CheckpointRow {
  busy: number;
  log: number;
  checkpointed: number;
}

interface Connection {
  checkpoint(): CheckpointRow | null;
  /** SQLite's `data_version`: changes when another connection (the store) has committed. */
  dataVersion(): number;
  /** The no-op write that restarts a fully checkpointed WAL; false when it could not commit. */
  restartWal(): boolean;
  /** A TRUNCATE checkpoint: the WAL file is emptied; false when a reader or writer was in the way. */
  truncateWal(): boolean;
  close(): void;
}

function connect(message: OpenMessage): Connection {
  const db = new Database(message.path, { readwrite: true, create: false, strict: true });
  try {
    // Never wait on a lock: a PASSIVE checkpoint skips what it cannot take and is retried, and the
    // restart write is only an optimisation.
    db.exec("PRAGMA busy_timeout = 0");
    // The checkpoint's fsyncs follow this connection's setting: the store's.
    db.exec(`PRAGMA synchronous = ${message.synchronous === "FULL" ? "FULL" : "NORMAL"}`);
    db.exec(`PRAGMA journal_size_limit = ${Math.floor(message.walSizeLimitBytes)}`);
    const checkpoint = db.prepare<CheckpointRow, []>("PRAGMA wal_checkpoint(PASSIVE)");
    const truncate = db.prepare<CheckpointRow, []>("PRAGMA wal_checkpoint(TRUNCATE)");
    const userVersion = db.prepare<{ user_version: number }, []>("PRAGMA user_version");
    const dataVersion = db.prepare<{ data_version: number }, []>("PRAGMA data_version");
    return {
      checkpoint: () => checkpoint.get(),
      dataVersion: () => dataVersion.get()?.data_version ?? 0,
      restartWal: () => {
        try {
          db.exec("BEGIN IMMEDIATE");
        } catch {
          return false;
        }
        try {
          const version = Math.trunc(userVersion.get()?.user_version ?? 0);
          // A value read from the file in this transaction, written back unchanged.
          db.exec(`PRAGMA user_version = ${version}`);
          db.exec("COMMIT");
          return true;
        } catch {
          try {
            if (db.inTransaction) db.exec("ROLLBACK");
          } catch {
            // Rolled back already.
          }
          return false;
        }
      },
      truncateWal: () => {
        try {
          return truncate.get()?.busy === 0;
        } catch {
          return false;
        }
      },
      close: () => {
        checkpoint.finalize();
        truncate.finalize();
        userVersion.finalize();
        dataVersion.finalize();
        db.close(false);
      },
    };
  } catch (error) {
    db.close(false);
    throw error;
  }
}

/** Serves one store for the life of the worker; `exit` ends the worker after `stop`. */
export function serveCheckpoints(port: CheckpointerPort, exit: () => void): void {
  let connection: Connection | undefined;
  let state: Int32Array | undefined;
  let options: OpenMessage | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** Highest request id received, and the highest one answered. */
  let requested = 0;
  let answered = 0;
  /** A request asked for a truncation that has not happened yet. */
  let truncateWanted = false;
  let lastLog = -1;
  let lastCheckpointed = -1;
  let lastVersion = -1;

  const schedule = (delayMs: number): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(run, delayMs);
  };

  const run = (): void => {
    timer = undefined;
    if (connection === undefined || state === undefined || options === undefined) return;
    const serving = requested;
    const started = performance.now();
    let row: CheckpointRow | null = null;
    let committed = false;
    try {
      const version = connection.dataVersion();
      committed = version !== lastVersion;
      lastVersion = version;
      row = connection.checkpoint();
    } catch {
      Atomics.add(state, SLOT.errors, 1);
    }
    let complete = row !== null && row.busy === 0 && row.checkpointed === row.log;
    // Only a hold asks: nothing else writes now, so the WAL can restart here rather than in a
    // commit, or be truncated (a scrub; not complete until it is, so the hold asks again).
    const truncated = serving > answered && complete && truncateWanted && connection.truncateWal();
    if (serving > answered && truncateWanted && !truncated) complete = false;
    if (truncated) {
      truncateWanted = false;
      Atomics.add(state, SLOT.truncations, 1);
    }
    const restarted =
      truncated || (serving > answered && complete && (row as CheckpointRow).log > 0 && connection.restartWal());
    if (restarted) Atomics.add(state, SLOT.restarts, 1);
    const ms = performance.now() - started;
    const log = row?.log ?? -1;
    const checkpointed = row?.checkpointed ?? -1;
    const us = Math.round(ms * 1000);
    Atomics.store(state, SLOT.log, log);
    Atomics.store(state, SLOT.checkpointed, checkpointed);
    Atomics.store(state, SLOT.lastRunUs, us);
    if (us > Atomics.load(state, SLOT.longestRunUs)) Atomics.store(state, SLOT.longestRunUs, us);
    Atomics.add(state, SLOT.totalRunMs, Math.round(ms));
    if (log > Atomics.load(state, SLOT.maxLog)) Atomics.store(state, SLOT.maxLog, log);
    // New frames since the last run: the WAL grew, or restarted (then all of it is new). A WAL
    // the store restarted and refilled to the length it had looks unchanged by its size alone:
    // data_version tells that the store committed meanwhile.
    const restartedByStore = committed && log <= lastLog;
    const fresh = row === null || log <= 0 ? 0 : restartedByStore || lastLog < 0 || log < lastLog ? log : log - lastLog;
    const progressed = fresh > 0 || (row !== null && log > 0 && checkpointed !== lastCheckpointed);
    if (progressed) Atomics.add(state, SLOT.copying, 1);
    Atomics.add(state, SLOT.runs, 1);
    // After a restart here the WAL holds one frame, which the next run should count as new.
    lastLog = restarted ? 0 : log;
    lastCheckpointed = restarted ? 0 : checkpointed;
    if (serving > answered) {
      answered = serving;
      port.postMessage({ type: "done", id: serving, complete, restarted, truncated, log, checkpointed, ms });
    }
    if (requested > answered) schedule(0);
    // A hold just ended: writes resume at full speed.
    else if (restarted) schedule(options.pollMs);
    else if (progressed && log >= options.eagerFrames) schedule(0);
    else schedule(fresh >= options.quietFrames ? options.pollMs : options.idlePollMs);
  };

  port.onmessage = (event: MessageEvent) => {
    const message = event.data as ToCheckpointer;
    switch (message.type) {
      case "open": {
        try {
          connection = connect(message);
        } catch (error) {
          port.postMessage({ type: "failed", message: error instanceof Error ? error.message : String(error) });
          return;
        }
        options = message;
        state = new Int32Array(message.state);
        port.postMessage({ type: "ready" });
        schedule(requested > answered ? 0 : message.pollMs);
        return;
      }
      case "checkpoint":
        if (message.id > requested) requested = message.id;
        if (message.truncate === true) truncateWanted = true;
        if (connection !== undefined) schedule(0);
        return;
      case "stop":
        if (timer !== undefined) clearTimeout(timer);
        timer = undefined;
        connection?.close();
        connection = undefined;
        port.postMessage({ type: "stopped" });
        exit();
        return;
      default:
        return;
    }
  };
}
