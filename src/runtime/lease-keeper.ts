/**
 * LeaseKeeper: the session leases this daemon holds when several daemons share one database
 * (D487). Takes a lease before the daemon serves a session's turns, renews every lease it holds
 * every third of the lease's time, and reports the sessions it lost: taken over by another daemon
 * (its renewal did not return them), or all of them when no renewal has succeeded for two thirds
 * of the lease (whether the renewal failed or still hangs, D525), so this daemon stops serving
 * before another can take them (the store refuses a late write anyway: appends are fenced by the
 * lease on the database's clock).
 */
import type { LeaseOutcome, SessionCluster } from "../core/session-cluster.ts";
import { type SessionKey, sessionKeyString } from "../core/session-key.ts";

export interface LeaseSettings {
  /** How long a lease lasts without renewal (default 15 s). */
  ttlMs: number;
  /**
   * The session whose lease covers `key` (D492: svc's incident sessions share their coordinator's,
   * so an incident is served whole by one daemon); absent: each session its own.
   */
  scope?: (key: SessionKey) => SessionKey;
  /**
   * Told before anything runs under a lease this daemon has just taken (D493: svc reads the
   * incident's pauses again); a failure gives the lease back and fails what needed it.
   */
  taken?: (scope: SessionKey) => Promise<void>;
}

export const DEFAULT_LEASE_SETTINGS: LeaseSettings = { ttlMs: 15_000 };

/** How long a stop waits for its leases to be given back (D525). */
const CLOSE_BUDGET_MS = 2_000;

export interface LeaseKeeperHooks {
  /** These sessions are no longer this daemon's: stop serving them. */
  lost(keys: SessionKey[], why: string): void;
  warn(message: string): void;
}

/** How long "another daemon holds it" stands before the database is asked again (D494). */
const ELSEWHERE_MS = 1_000;
/** Sessions remembered as held elsewhere, at most. */
const ELSEWHERE_KEPT = 10_000;

export class LeaseKeeper {
  readonly #cluster: SessionCluster;
  readonly #settings: LeaseSettings;
  readonly #hooks: LeaseKeeperHooks;
  /** Held sessions by name, with when each was taken (a renewal that began earlier cannot have seen it). */
  readonly #held = new Map<string, { key: SessionKey; takenAt: number }>();
  /** Per session: the lease operation in progress (acquires and releases run one at a time, D526). */
  readonly #queued = new Map<string, Promise<void>>();
  /** Sessions a live daemon was just found holding, and until when that answer stands (D494). */
  readonly #elsewhere = new Map<string, { holder: string; until: number }>();
  #lastRenewed = performance.now();
  #timer: ReturnType<typeof setInterval> | undefined;
  #renewing = false;

  constructor(cluster: SessionCluster, settings: LeaseSettings, hooks: LeaseKeeperHooks) {
    this.#cluster = cluster;
    this.#settings = settings;
    this.#hooks = hooks;
  }

  get daemonId(): string {
    return this.#cluster.daemonId;
  }

  get heldCount(): number {
    return this.#held.size;
  }

  holds(key: SessionKey): boolean {
    return this.#held.has(sessionKeyString(this.scope(key)));
  }

  /** The session whose lease covers `key`. */
  scope(key: SessionKey): SessionKey {
    return this.#settings.scope?.(key) ?? key;
  }

  async start(): Promise<void> {
    await this.#cluster.keepAlive();
    this.#lastRenewed = performance.now();
    // Every sixth of the lease: a renewal every third, and a renewal that hangs is noticed in time.
    this.#timer = setInterval(() => this.#tick(), Math.max(25, Math.floor(this.#settings.ttlMs / 6)));
    this.#timer.unref?.();
  }

  /** Take (or keep) the session's lease; `taken`: it was not this daemon's a moment ago. */
  acquire(session: SessionKey): Promise<LeaseOutcome & { taken: boolean }> {
    const key = this.scope(session);
    const name = sessionKeyString(key);
    return this.#serial(name, async () => {
      if (this.#held.has(name)) return { held: true, holder: this.daemonId, taken: false };
      const takenAt = performance.now();
      // Just found held by a live daemon: asked again only after a moment (D494).
      const elsewhere = this.#elsewhere.get(name);
      if (elsewhere !== undefined && elsewhere.until > takenAt)
        return { held: false, holder: elsewhere.holder, taken: false };
      const outcome = await this.#cluster.acquireLease(key, this.#settings.ttlMs);
      if (outcome.held) {
        this.#held.set(name, { key, takenAt });
        this.#elsewhere.delete(name);
      } else if (outcome.holder !== "") this.#noteElsewhere(name, outcome.holder, takenAt);
      return { ...outcome, taken: outcome.held };
    });
  }

  /** Give the lease back (`lapse`: expired at once, so another daemon takes the session over now). */
  release(session: SessionKey, lapse: boolean): Promise<void> {
    const key = this.scope(session);
    const name = sessionKeyString(key);
    if (!this.#held.delete(name)) return Promise.resolve();
    return this.#serial(name, async () => {
      try {
        await this.#cluster.releaseLease(key, lapse);
      } catch (error) {
        // It lapses by itself within the lease's time.
        this.#hooks.warn(`session ${name}: releasing its lease: ${String(error)}`);
      }
    });
  }

  /** Remember, for a moment, that a live daemon holds the session (bounded: the oldest go first). */
  #noteElsewhere(name: string, holder: string, now: number): void {
    this.#elsewhere.delete(name);
    this.#elsewhere.set(name, { holder, until: now + Math.min(ELSEWHERE_MS, this.#settings.ttlMs / 3) });
    if (this.#elsewhere.size > ELSEWHERE_KEPT) {
      const oldest = this.#elsewhere.keys().next().value;
      if (oldest !== undefined) this.#elsewhere.delete(oldest);
    }
  }

  /**
   * One lease operation at a time per session, in call order (D526): an acquire that follows a
   * release (a request just after an idle eviction) runs after the release's delete, never before it.
   */
  #serial<T>(name: string, work: () => Promise<T>): Promise<T> {
    const run = (this.#queued.get(name) ?? Promise.resolve()).then(work);
    const settled = run.then(
      () => {},
      () => {},
    );
    this.#queued.set(name, settled);
    void settled.then(() => {
      if (this.#queued.get(name) === settled) this.#queued.delete(name);
    });
    return run;
  }

  /**
   * A renewal is due every third of the lease. One still unanswered is not waited for (D525): a
   * partition keeps the socket open and answers nothing, so after two thirds of the lease without
   * a renewal this daemon stops serving every held session, whether the renewal failed or hangs.
   */
  #tick(): void {
    if (this.#renewing) {
      this.#dropOverdue("no answer from the database");
      return;
    }
    if (performance.now() - this.#lastRenewed >= this.#settings.ttlMs / 3 - 5) void this.renew();
  }

  /** Drop the sessions whose lease was last extended (taken or renewed) two thirds of the lease ago. */
  #dropOverdue(reason: string): void {
    const limit = performance.now() - (this.#settings.ttlMs * 2) / 3;
    const overdue = [...this.#held].filter(([, held]) => Math.max(held.takenAt, this.#lastRenewed) < limit);
    this.#drop(
      overdue.map(([name]) => name),
      `its lease could not be renewed (${reason})`,
    );
  }

  /** Extend every held lease; report those another daemon took and, after too long without a renewal, all. */
  async renew(): Promise<void> {
    if (this.#renewing) return;
    this.#renewing = true;
    const started = performance.now();
    try {
      if (this.#held.size === 0) {
        this.#lastRenewed = started;
        // The liveness mark is kept (taken again after a database restart) even with nothing held.
        await this.#cluster.keepAlive().catch(() => {});
        return;
      }
      const kept = new Set((await this.#cluster.renewLeases(this.#settings.ttlMs)).map(sessionKeyString));
      this.#lastRenewed = started;
      const lost = [...this.#held].filter(([name, held]) => !kept.has(name) && held.takenAt < started);
      this.#drop(
        lost.map(([name]) => name),
        "another daemon holds its lease now",
      );
    } catch (error) {
      this.#dropOverdue(String(error));
    } finally {
      this.#renewing = false;
    }
  }

  #drop(names: string[], why: string): void {
    const keys: SessionKey[] = [];
    for (const name of names) {
      const held = this.#held.get(name);
      if (held === undefined) continue;
      this.#held.delete(name);
      keys.push(held.key);
    }
    if (keys.length > 0) this.#hooks.lost(keys, why);
  }

  /**
   * Stop renewing and give every lease back: `lapse(key)` decides which go to another daemon now.
   * Waits at most `budgetMs` (D525): a stop cut off from the database would wait forever, and a
   * lease not given back lapses by itself.
   */
  async close(lapse: (key: SessionKey) => boolean, budgetMs = CLOSE_BUDGET_MS): Promise<void> {
    clearInterval(this.#timer);
    const held = [...this.#held.values()].map((entry) => entry.key);
    let timer: ReturnType<typeof setTimeout> | undefined;
    // Deadline: the bound on the releases' answers, reached only when the database does not answer.
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.#hooks.warn(
          `${held.length} session lease(s) not given back within ${budgetMs} ms; they lapse by themselves`,
        );
        resolve();
      }, budgetMs);
    });
    await Promise.race([Promise.all(held.map((key) => this.release(key, lapse(key)))), deadline]);
    clearTimeout(timer);
  }
}
