/**
 * PeerHub: the peer registry as the daemon runs it: the core rules (core/peer-registry.ts) with
 * the wall clock, a prune timer (unref'd, so it never keeps the process alive) and, with a state
 * file, persistence. Owns no HTTP (peer-routes.ts) and no flag parsing (peer-flags.ts).
 *
 * Persistence (spec "Peer hub"): every register, heartbeat, deregister and every prune that
 * dropped something rewrites the whole snapshot (peer-state-file.ts: JSON Lines, atomic, 0600).
 * At open the file is reloaded (lapsed leases dropped, ownership kept, bad lines skipped with a
 * warning) and written straight back, which proves the directory writable: an unreadable file
 * or an unwritable directory makes `open` return an error, for the caller to report as a startup
 * error. After startup a failed write is logged and the change stands in memory (peers recover
 * by re-registering, as after any hub restart); the next change retries the write.
 */
import type { SparError } from "../../core/errors.ts";
import {
  type LabelFilter,
  type PeerCaller,
  type PeerRegistration,
  type PeerRegistrationInput,
  PeerRegistry,
} from "../../core/peer-registry.ts";
import { type Result, err, ok } from "../../core/result.ts";
import { readStateFile, writeStateFile } from "./peer-state-file.ts";

export const DEFAULT_PRUNE_INTERVAL_MS = 5000;

export interface PeerHubLog {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export interface PeerHubOptions {
  /** JSON Lines snapshot path; undefined keeps the registry in memory only. */
  stateFile?: string | undefined;
  log: PeerHubLog;
  /** Epoch milliseconds; defaults to Date.now. */
  now?: () => number;
  /** Registration id source (tests); defaults to 128 random bits. */
  newId?: () => string;
}

export class PeerHub {
  readonly #registry: PeerRegistry;
  readonly #stateFile: string | undefined;
  readonly #log: PeerHubLog;
  #timer: ReturnType<typeof setInterval> | undefined;

  private constructor(registry: PeerRegistry, stateFile: string | undefined, log: PeerHubLog) {
    this.#registry = registry;
    this.#stateFile = stateFile;
    this.#log = log;
  }

  /**
   * Build the hub, reloading and rewriting the state file when one is given. An error means
   * startup must fail (its message names the file and the cause).
   */
  static open(options: PeerHubOptions): Result<PeerHub, string> {
    const registry = new PeerRegistry({ now: options.now ?? Date.now, ...(options.newId ? { newId: options.newId } : {}) });
    const hub = new PeerHub(registry, options.stateFile, options.log);
    const path = options.stateFile;
    if (path === undefined) return ok(hub);
    const contents = readStateFile(path);
    if (!contents.ok) return err(contents.error);
    for (const warning of contents.value.warnings) options.log.warn(warning);
    const report = registry.restore(contents.value.records);
    for (const reason of report.skipped) options.log.warn(`peer state file ${path}: ${reason}; skipped`);
    try {
      writeStateFile(path, registry.snapshot());
    } catch (error) {
      return err((error as Error).message);
    }
    options.log.info(`peer hub: restored ${report.restored} registration(s) from ${path}, dropped ${report.expired} expired`);
    return ok(hub);
  }

  register(caller: PeerCaller, input: PeerRegistrationInput): Result<PeerRegistration, SparError> {
    return this.#persistOnSuccess(this.#registry.register(caller, input));
  }

  list(filters: readonly LabelFilter[] = []): PeerRegistration[] {
    return this.#registry.list(filters);
  }

  heartbeat(caller: PeerCaller, registrationId: string): Result<PeerRegistration, SparError> {
    return this.#persistOnSuccess(this.#registry.heartbeat(caller, registrationId));
  }

  deregister(caller: PeerCaller, registrationId: string): Result<{ removed: boolean }, SparError> {
    const result = this.#registry.deregister(caller, registrationId);
    if (result.ok && result.value.removed) this.#persist();
    return result;
  }

  /** Drop lapsed leases now; returns how many were dropped. */
  prune(): number {
    const dropped = this.#registry.prune();
    if (dropped.length > 0) this.#persist();
    return dropped.length;
  }

  /** Prune every `intervalMs` on an unref'd timer until `close`. Idempotent. */
  startPruning(intervalMs: number = DEFAULT_PRUNE_INTERVAL_MS): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => this.prune(), intervalMs);
    this.#timer.unref();
  }

  /**
   * Stop the prune timer. Registrations stay in the snapshot (leases are honored across a
   * restart); every change is already on disk, so there is nothing to flush. Synchronous.
   */
  close(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #persistOnSuccess<T>(result: Result<T, SparError>): Result<T, SparError> {
    if (result.ok) this.#persist();
    return result;
  }

  #persist(): void {
    if (this.#stateFile === undefined) return;
    try {
      writeStateFile(this.#stateFile, this.#registry.snapshot());
    } catch (error) {
      this.#log.error(`${(error as Error).message}; the change stands in memory and the next one retries`);
    }
  }
}
