/**
 * PeerHub: the peer registry as the daemon runs it: the core rules (core/peer-registry.ts) with
 * the wall clock, a prune timer (unref'd, so it never keeps the process alive) and, with a state
 * file, persistence. Owns no HTTP (peer-routes.ts) and no flag parsing (peer-flags.ts).
 *
 * Persistence (docs/agent.md#peer-hub): every register, heartbeat and deregister appends one line to the
 * journal beside the snapshot (peer-journal.ts), and the snapshot is rewritten (atomic, 0600)
 * only once the journal has outgrown it, so N changes write O(N) bytes, not N snapshots.
 * Lapsed leases are not journaled (each record carries its expiry). At open the snapshot and
 * journal are reloaded (lapsed leases dropped, leases cut to the maximum TTL, ownership kept, bad
 * lines skipped with a warning) and compacted straight away, which proves the directory
 * writable: an unreadable file or an unwritable directory makes `open` return an error, for the
 * caller to report as a startup error. After startup a failed write is logged and the change
 * stands in memory (peers recover by re-registering, as after any hub restart); the next change
 * writes a whole snapshot instead of a journal line.
 */
import type { SparError } from "../../core/errors.ts";
import {
  type LabelFilter,
  type PeerCaller,
  type PeerLimits,
  type PeerRegistration,
  type PeerRegistrationInput,
  PeerRegistry,
  toPeerRecord,
} from "../../core/peer-registry.ts";
import { type Result, err, ok } from "../../core/result.ts";
import { type JournalOp, PeerJournal } from "./peer-journal.ts";

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
  /** Registration caps and the longest lease; defaults: DEFAULT_PEER_LIMITS. */
  limits?: Partial<PeerLimits>;
}

export class PeerHub {
  readonly #registry: PeerRegistry;
  readonly #journal: PeerJournal | undefined;
  readonly #log: PeerHubLog;
  #timer: ReturnType<typeof setInterval> | undefined;
  /** A write failed: the next change writes a whole snapshot rather than trust the journal. */
  #compactNext = false;

  private constructor(registry: PeerRegistry, journal: PeerJournal | undefined, log: PeerHubLog) {
    this.#registry = registry;
    this.#journal = journal;
    this.#log = log;
  }

  /**
   * Build the hub, reloading and compacting the state file when one is given. An error means
   * startup must fail (its message names the file and the cause).
   */
  static open(options: PeerHubOptions): Result<PeerHub, string> {
    const registry = new PeerRegistry({
      now: options.now ?? Date.now,
      ...(options.newId ? { newId: options.newId } : {}),
      ...(options.limits ? { limits: options.limits } : {}),
    });
    const path = options.stateFile;
    if (path === undefined) return ok(new PeerHub(registry, undefined, options.log));
    const loaded = PeerJournal.open(path);
    if (!loaded.ok) return err(loaded.error);
    for (const warning of loaded.value.warnings) options.log.warn(warning);
    const report = registry.restore(loaded.value.records);
    for (const reason of report.skipped) options.log.warn(`peer state file ${path}: ${reason}; skipped`);
    try {
      loaded.value.journal.compact(registry.snapshot());
    } catch (error) {
      return err((error as Error).message);
    }
    options.log.info(
      `peer hub: restored ${report.restored} registration(s) from ${path}, dropped ${report.expired} expired`,
    );
    return ok(new PeerHub(registry, loaded.value.journal, options.log));
  }

  register(caller: PeerCaller, input: PeerRegistrationInput): Result<PeerRegistration, SparError> {
    const result = this.#registry.register(caller, input);
    if (result.ok) this.#persist({ op: "put", record: toPeerRecord(result.value) });
    return result;
  }

  list(filters: readonly LabelFilter[] = []): PeerRegistration[] {
    return this.#registry.list(filters);
  }

  heartbeat(caller: PeerCaller, registrationId: string): Result<PeerRegistration, SparError> {
    const result = this.#registry.heartbeat(caller, registrationId);
    if (result.ok)
      this.#persist({
        op: "beat",
        name: result.value.name,
        expires_at: new Date(result.value.expiresAt).toISOString(),
      });
    return result;
  }

  deregister(caller: PeerCaller, registrationId: string): Result<{ removed: boolean }, SparError> {
    const held = this.#registry.list().find((registration) => registration.registrationId === registrationId);
    const result = this.#registry.deregister(caller, registrationId);
    if (result.ok && result.value.removed && held) this.#persist({ op: "del", name: held.name });
    return result;
  }

  /** Drop lapsed leases now; returns how many were dropped (nothing to write: records carry their expiry). */
  prune(): number {
    return this.#registry.prune().length;
  }

  /** Prune every `intervalMs` on an unref'd timer until `close`. Idempotent. */
  startPruning(intervalMs: number = DEFAULT_PRUNE_INTERVAL_MS): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => this.prune(), intervalMs);
    this.#timer.unref();
  }

  /** Registrations held, lapsed ones the prune has not dropped yet included. */
  get held(): number {
    return this.#registry.size;
  }

  /**
   * Stop the prune timer. Registrations stay on disk (leases are honored across a restart); every
   * change is already written, so there is nothing to flush. Synchronous.
   */
  close(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #persist(op: JournalOp): void {
    const journal = this.#journal;
    if (journal === undefined) return;
    try {
      if (this.#compactNext || journal.due) {
        this.#registry.prune();
        journal.compact(this.#registry.snapshot());
        this.#compactNext = false;
      } else {
        journal.append(op);
      }
    } catch (error) {
      this.#compactNext = true;
      this.#log.error(
        `${(error as Error).message}; the change stands in memory and the next one rewrites the state file`,
      );
    }
  }
}
