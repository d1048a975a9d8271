/**
 * WAL checkpoints off the main thread, the main thread's side: starts the checkpointer Worker
 * (workers/store-checkpointer.ts, logic in checkpoint-worker.ts) with its own connection to the
 * store file, decides when the store's writes must pause for a moment so the WAL can restart, and
 * stops the worker at close. The main connection runs with wal_autocheckpoint=0, so no commit ever
 * checkpoints (copies frames and fsyncs) inside the daemon's event loop.
 *
 * Why writes sometimes pause: SQLite restarts the WAL from its start only when a write transaction
 * begins while every frame in it has been checkpointed. Under sustained writes a checkpoint that
 * runs beside the writer never catches up (frames land while it copies), so the WAL would grow
 * without bound. So, between two write transactions (`mayWrite`, called by the group commit and the
 * journal merge before each), the store *holds* writes (they queue; reads, HTTP and everything else
 * go on) and asks the worker for one more checkpoint. Once a checkpoint that started after the hold
 * has copied every frame, the worker restarts the WAL itself with a no-op write (so the fsync of
 * the new WAL header and the journal_size_limit truncation happen in the worker, not in a commit)
 * and the hold ends (`resume`); the next commit appends to the restarted WAL (or restarts it, if
 * the worker's write could not). Without holds (light load), the commit after a complete
 * checkpoint restarts the WAL, with that one small fsync; idlePollMs keeps those rare.
 *  - soft trigger: the WAL held `walTargetBytes` or more at the worker's last run and that run was
 *    short (the worker runs back to back above that size, so its runs shrink): a short hold.
 *  - hard trigger: the -wal file is past `walLimitBytes` (journal_size_limit truncates it back to
 *    that size when the WAL restarts, so its size past the limit is WAL content): hold whatever it
 *    costs, up to `maxHoldMs`; a hold that times out is given up and not retried for a while.
 * If the worker cannot start or dies, the store falls back to SQLite's automatic checkpoint on the
 * main connection (`fallback`): slower pauses, but the WAL stays bounded.
 *  - scrub (`scrub`, after a deleted session's rows left the tables): a hold whose checkpoint ends
 *    with the WAL file truncated to zero bytes, so no old frame keeps the deleted text.
 *
 * Settles no promises of the store and logs nothing; counts in `stats`.
 */
import { workerUrl } from "../../rpc/worker-urls.ts";
import { statSync } from "node:fs";
import { SLOT, SLOT_COUNT, type FromCheckpointer, type ToCheckpointer } from "./checkpoint-worker.ts";

export interface CheckpointOptions {
  /** The worker checkpoints this often while the WAL grows by a MiB or more per poll, ms (default 100). */
  pollMs?: number;
  /** ... and this often otherwise, ms (default 1000): fewer, larger checkpoints when writes are light. */
  idlePollMs?: number;
  /** From this WAL size on, the WAL is restarted as soon as a short write hold suffices (default 16 MiB). */
  walTargetBytes?: number;
  /** Past this WAL size, writes are held until the WAL restarts (default 64 MiB). */
  walLimitBytes?: number;
  /** A hold that has not restarted the WAL after this long is given up (default 1000 ms). */
  maxHoldMs?: number;
  /** The worker entrypoint (default `checkpointerUrl()`); one that fails to load means the fallback. */
  workerUrl?: URL;
}

export type CheckpointerState = "starting" | "running" | "failed" | "stopped" | "off";

export interface CheckpointStats {
  /** "off": checkpoints run inside commits (option `checkpoint: false`); "failed": fell back to that. */
  checkpointer: CheckpointerState;
  /** Checkpoints the worker ran that copied frames. */
  checkpoints: number;
  /** Longest checkpoint in the worker (ms): time the main thread no longer spends. */
  longestCheckpointMs: number;
  /** Checkpoint runs in the worker that failed (retried at the next poll). */
  checkpointErrors: number;
  /** Most frames the WAL held at the start of a worker checkpoint. */
  maxWalFrames: number;
  /** WAL restarts the worker did at the end of a hold (the others happen in a commit). */
  walRestartsInWorker: number;
  /** Largest -wal file size seen between writes (bytes). */
  maxWalBytes: number;
  /** Times writes were held so the WAL could restart. */
  walHolds: number;
  /** Longest and total time writes were held (ms); the event loop runs meanwhile. */
  longestWalHoldMs: number;
  totalWalHoldMs: number;
  /** Holds given up after maxHoldMs. */
  walHoldTimeouts: number;
  /** Holds after which the next write still did not restart the WAL. */
  walRestartFailures: number;
  /** WAL files truncated to zero bytes by a scrub (after a session was deleted). */
  walScrubs: number;
}

export interface CheckpointerHooks {
  /** A hold ended: run the writes that queued during it. */
  resume(): void;
  /** The worker is gone: checkpoint on the main connection again. */
  fallback(): void;
}

/** A soft hold starts only when the worker's last checkpoint took at most this long. */
const QUICK_RUN_US = 5000;
/** After a hold timed out, no new hold for this long. */
const HOLD_COOLDOWN_MS = 10_000;
/** Close waits this long for the worker to close its connection before terminating it. */
const STOP_TIMEOUT_MS = 5000;
/** WAL frame: 24-byte header plus the page. */
const FRAME_HEADER_BYTES = 24;

export const DEFAULT_POLL_MS = 100;
export const DEFAULT_IDLE_POLL_MS = 1000;
/** A worker run that found fewer new frames than this (1 MiB) waits idlePollMs for the next. */
const QUIET_FRAMES = 256;
export const DEFAULT_WAL_TARGET_BYTES = 16 * 1024 * 1024;
export const DEFAULT_WAL_LIMIT_BYTES = 64 * 1024 * 1024;
const DEFAULT_MAX_HOLD_MS = 1000;

/** URL of workers/store-checkpointer.ts, from source and inside the single binary (src/rpc/worker-urls.ts). */
export function checkpointerUrl(): URL {
  return workerUrl("store-checkpointer");
}

export class Checkpointer {
  private status: CheckpointerState;
  private worker: Worker | undefined;
  private readonly shared: Int32Array;
  private readonly walPath: string;
  private readonly pollMs: number;
  private readonly idlePollMs: number;
  private readonly targetFrames: number;
  private readonly limitBytes: number;
  private readonly maxHoldMs: number;
  private readonly workerUrl: URL | undefined;
  private requestId = 0;
  private holding = false;
  private holdId = 0;
  private holdStarted = 0;
  private holdTimer: ReturnType<typeof setTimeout> | undefined;
  private noHoldUntil = 0;
  /** The hold ended with every frame checkpointed: the next write restarts the WAL. */
  private restartNext = false;
  /** The write after that checks the restart happened. */
  private verifyRestart = false;
  /** A soft hold needs the worker's run count past this (a run that saw the restarted WAL). */
  private softAfterRuns = 0;
  /** A scrub was asked for and the WAL has not been truncated since. */
  private scrubWanted = false;
  private scrubRetry: ReturnType<typeof setTimeout> | undefined;
  private stopped: Promise<void> | undefined;
  private readonly counters = {
    walHolds: 0,
    longestWalHoldMs: 0,
    totalWalHoldMs: 0,
    walHoldTimeouts: 0,
    walRestartFailures: 0,
    maxWalBytes: 0,
  };

  /** `options === false`: no worker; the caller leaves checkpoints to SQLite inside commits. */
  constructor(
    private readonly path: string,
    private readonly synchronous: "NORMAL" | "FULL",
    options: CheckpointOptions | false,
    private readonly hooks: CheckpointerHooks,
    pageSize: number,
  ) {
    const opts = options === false ? {} : options;
    this.status = options === false ? "off" : "starting";
    this.shared = new Int32Array(new SharedArrayBuffer(SLOT_COUNT * Int32Array.BYTES_PER_ELEMENT));
    this.walPath = `${path}-wal`;
    this.pollMs = Math.max(1, opts.pollMs ?? DEFAULT_POLL_MS);
    this.idlePollMs = Math.max(this.pollMs, opts.idlePollMs ?? DEFAULT_IDLE_POLL_MS);
    this.limitBytes = Math.max(1, opts.walLimitBytes ?? DEFAULT_WAL_LIMIT_BYTES);
    const target = Math.min(opts.walTargetBytes ?? DEFAULT_WAL_TARGET_BYTES, this.limitBytes);
    this.targetFrames = Math.max(1, Math.floor(target / (pageSize + FRAME_HEADER_BYTES)));
    this.maxHoldMs = Math.max(1, opts.maxHoldMs ?? DEFAULT_MAX_HOLD_MS);
    this.workerUrl = opts.workerUrl;
  }

  /** journal_size_limit for the main connection: a restarted WAL is truncated back to this. */
  get walLimitBytes(): number {
    return this.limitBytes;
  }

  get stats(): CheckpointStats {
    const s = this.shared;
    return {
      checkpointer: this.status,
      checkpoints: Atomics.load(s, SLOT.copying),
      longestCheckpointMs: Atomics.load(s, SLOT.longestRunUs) / 1000,
      checkpointErrors: Atomics.load(s, SLOT.errors),
      maxWalFrames: Atomics.load(s, SLOT.maxLog),
      walRestartsInWorker: Atomics.load(s, SLOT.restarts),
      walScrubs: Atomics.load(s, SLOT.truncations),
      ...this.counters,
    };
  }

  /** Starts the worker (no-op when off). Never throws: a worker that cannot start means fallback. */
  start(): void {
    if (this.status !== "starting") return;
    let worker: Worker;
    try {
      worker = new Worker(this.workerUrl ?? checkpointerUrl());
    } catch {
      this.fail();
      return;
    }
    this.worker = worker;
    // Never keeps the process alive by itself: a daemon closes the store, a script may just exit.
    worker.unref();
    worker.onmessage = (event: MessageEvent) => this.onMessage(event.data as FromCheckpointer);
    worker.addEventListener("error", () => this.fail());
    worker.addEventListener("close", () => {
      if (this.status === "starting" || this.status === "running") this.fail();
    });
    this.post({
      type: "open",
      path: this.path,
      synchronous: this.synchronous,
      walSizeLimitBytes: this.limitBytes,
      pollMs: this.pollMs,
      idlePollMs: this.idlePollMs,
      quietFrames: QUIET_FRAMES,
      eagerFrames: this.targetFrames,
      state: this.shared.buffer as SharedArrayBuffer,
    });
  }

  /**
   * Before each write transaction (synchronous, between transactions): false while writes are held,
   * and false when this call starts a hold. The caller parks its writes until `hooks.resume`.
   */
  mayWrite(): boolean {
    if (this.status !== "starting" && this.status !== "running") return true;
    if (this.holding) return false;
    if (this.restartNext) {
      // The write that restarts the WAL: the file is still past the limit until it commits.
      this.restartNext = false;
      this.verifyRestart = true;
      return true;
    }
    const size = statSync(this.walPath, { throwIfNoEntry: false })?.size ?? 0;
    if (size > this.counters.maxWalBytes) this.counters.maxWalBytes = size;
    if (this.verifyRestart) {
      this.verifyRestart = false;
      // A worker run that started after the restart: the second one completed from now.
      this.softAfterRuns = Atomics.load(this.shared, SLOT.runs) + 1;
      if (size > this.limitBytes) {
        // Not restarted (another connection holds a snapshot): do not hold again for a while.
        this.counters.walRestartFailures++;
        this.noHoldUntil = performance.now() + HOLD_COOLDOWN_MS;
      }
    }
    if (performance.now() < this.noHoldUntil) return true;
    if (size > this.limitBytes || this.converged()) {
      this.hold();
      return false;
    }
    return true;
  }

  /**
   * A deleted session's text may still be in WAL frames: hold writes, checkpoint every frame and
   * truncate the WAL file to zero bytes in the worker. Call between write transactions. A hold
   * that times out is retried after the cool-down, writes or not. False when there is no worker
   * (off or failed): the caller truncates on its own connection.
   */
  scrub(): boolean {
    if (this.status !== "starting" && this.status !== "running") return false;
    this.scrubWanted = true;
    if (!this.holding) this.hold();
    return true;
  }

  /** The WAL is past the target and the worker's last run (since the last restart) was short. */
  private converged(): boolean {
    if (this.status !== "running") return false;
    const s = this.shared;
    return (
      Atomics.load(s, SLOT.runs) > this.softAfterRuns &&
      Atomics.load(s, SLOT.log) >= this.targetFrames &&
      Atomics.load(s, SLOT.lastRunUs) <= QUICK_RUN_US
    );
  }

  private hold(): void {
    this.holding = true;
    this.holdStarted = performance.now();
    this.counters.walHolds++;
    this.request();
    this.holdTimer = setTimeout(() => this.endHold("timeout"), this.maxHoldMs);
  }

  /** Asks for a checkpoint that starts after now; its `done` answers the hold. */
  private request(): void {
    this.holdId = ++this.requestId;
    this.post({ type: "checkpoint", id: this.holdId, ...(this.scrubWanted ? { truncate: true } : {}) });
  }

  /**
   * `restarted`: the worker restarted the WAL; `restartable`: every frame is checkpointed, the next
   * write restarts it; `timeout`: given up (cool down); `stopping`: the store is closing, writes are
   * not resumed.
   */
  private endHold(why: "restarted" | "restartable" | "timeout" | "failed" | "stopping"): void {
    if (!this.holding) return;
    this.holding = false;
    if (this.holdTimer !== undefined) clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    const ms = performance.now() - this.holdStarted;
    this.counters.totalWalHoldMs += ms;
    if (ms > this.counters.longestWalHoldMs) this.counters.longestWalHoldMs = ms;
    if (why === "timeout") {
      this.counters.walHoldTimeouts++;
      this.noHoldUntil = performance.now() + HOLD_COOLDOWN_MS;
    }
    if (why === "restartable" || why === "restarted") {
      // The next write restarts the WAL, or (restarted) just appends to the restarted one.
      this.restartNext = why === "restartable";
      this.verifyRestart = why === "restarted";
      // No soft hold on what the worker saw before the restart (set again once it happened).
      this.softAfterRuns = Number.MAX_SAFE_INTEGER;
    } else {
      this.softAfterRuns = Atomics.load(this.shared, SLOT.runs) + 1;
    }
    if (this.scrubWanted && (why === "timeout" || why === "restartable")) this.retryScrub();
    if (why !== "stopping") this.hooks.resume();
  }

  private retryScrub(): void {
    if (this.scrubRetry !== undefined) return;
    this.scrubRetry = setTimeout(() => {
      this.scrubRetry = undefined;
      if (this.scrubWanted && !this.holding && this.status === "running") this.hold();
    }, HOLD_COOLDOWN_MS);
    this.scrubRetry.unref?.();
  }

  private onMessage(message: FromCheckpointer): void {
    switch (message.type) {
      case "ready":
        if (this.status === "starting") this.status = "running";
        return;
      case "done":
        if (message.truncated) this.scrubWanted = false;
        if (!this.holding || message.id < this.holdId) return;
        // Nothing was written since the hold began, so "every frame copied" holds now too.
        if (message.restarted) this.endHold("restarted");
        else if (message.complete) this.endHold("restartable");
        else this.request();
        return;
      case "failed":
        this.fail();
        return;
      default:
        return;
    }
  }

  /** The worker could not start or died: SQLite checkpoints inside commits again. */
  private fail(): void {
    if (this.status !== "starting" && this.status !== "running") return;
    this.status = "failed";
    this.worker?.terminate();
    this.worker = undefined;
    this.hooks.fallback();
    this.endHold("failed");
  }

  private post(message: ToCheckpointer): void {
    this.worker?.postMessage(message);
  }

  /**
   * Ends any hold (without resuming writes: the store is closing), asks the worker to close its
   * connection and waits for it to exit (terminating it after STOP_TIMEOUT_MS). Idempotent.
   */
  stop(): Promise<void> {
    this.stopped ??= this.stopWorker();
    return this.stopped;
  }

  private async stopWorker(): Promise<void> {
    const worker = this.worker;
    const wasActive = this.status === "starting" || this.status === "running";
    if (wasActive) this.status = "stopped";
    this.endHold("stopping");
    if (this.scrubRetry !== undefined) clearTimeout(this.scrubRetry);
    this.scrubRetry = undefined;
    this.worker = undefined;
    if (worker === undefined || !wasActive) return;
    const { promise, resolve } = Promise.withResolvers<void>();
    const timer = setTimeout(() => {
      worker.terminate();
      resolve();
    }, STOP_TIMEOUT_MS);
    worker.addEventListener("close", () => {
      clearTimeout(timer);
      resolve();
    });
    worker.postMessage({ type: "stop" } satisfies ToCheckpointer);
    await promise;
  }
}
