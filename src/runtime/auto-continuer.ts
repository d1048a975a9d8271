/**
 * AutoContinuer: the daemon-wide side of auto-continue. Records this run in the store (and reads
 * how many recent runs stopped uncleanly: the crash-loop breaker), keeps the per-run and
 * per-session counts, applies the guards of core/auto-continue.ts, and takes the store claim on
 * each interruption so a second daemon on the same store stands down.
 */
import { CLAIM_TTL_MS, type ContinueCause, continueRefusal } from "../core/auto-continue.ts";
import { uuidv7 } from "../core/ids.ts";
import { type SessionKey, sessionKeyString } from "../core/session-key.ts";
import type { DaemonCoordination } from "../core/session-store.ts";

export interface AutoContinueSettings {
  enabled: boolean;
  freshnessMs: number;
  backoffMs: number;
  maxPerBoot: number;
  maxPerSession: number;
  crashLoopBoots: number;
  crashLoopWindowMs: number;
}

export interface ContinueAsk {
  key: SessionKey;
  cause: ContinueCause;
  interruption: string;
  /** RFC 3339 time of the interruption. */
  at: string;
  sequence: number;
  halted: boolean;
  turnInFlight: boolean;
}

export interface AutoContinueStats {
  redriven: number;
  refused: number;
  breakerOpen: boolean;
}

export class AutoContinuer {
  readonly settings: AutoContinueSettings;
  /** This run's name in boot records and claims (the daemon's run id where it has one, D490). */
  readonly bootId: string;
  readonly #store: DaemonCoordination;
  readonly #now: () => Date;
  readonly #log: (message: string) => void;
  readonly #perSession = new Map<string, number>();
  #redriven = 0;
  #refused = 0;
  #breakerOpen = false;
  #begun = false;

  constructor(
    settings: AutoContinueSettings,
    store: DaemonCoordination,
    now: () => Date,
    log: (message: string) => void,
    bootId: string = uuidv7(),
  ) {
    this.bootId = bootId;
    this.settings = settings;
    this.#store = store;
    this.#now = now;
    this.#log = log;
  }

  get stats(): AutoContinueStats {
    return { redriven: this.#redriven, refused: this.#refused, breakerOpen: this.#breakerOpen };
  }

  /** Record this run; open the breaker when recent runs kept stopping uncleanly. */
  async begin(): Promise<void> {
    const now = this.#now();
    const windowStart = new Date(now.getTime() - this.settings.crashLoopWindowMs).toISOString();
    let unclean: number;
    try {
      unclean = await this.#store.beginBoot(this.bootId, now.toISOString(), windowStart);
    } catch (error) {
      // A store that refuses writes (full, read-only) must not keep the daemon from starting;
      // without a boot record the breaker cannot count this run, so restart re-drives stay off.
      this.#breakerOpen = true;
      this.#log(
        `auto-continue: this run could not be recorded (${String(error)}); turns cut by a restart are not re-driven this run`,
      );
      return;
    }
    this.#begun = true;
    if (this.settings.enabled && unclean >= this.settings.crashLoopBoots) {
      this.#breakerOpen = true;
      this.#log(
        `auto-continue: crash-loop breaker open: ${unclean} unclean stop(s) in the last ${Math.round(this.settings.crashLoopWindowMs / 1000)}s; turns cut by a restart are not re-driven this run`,
      );
    }
  }

  /** An orderly stop: this run no longer counts toward the breaker. */
  async end(): Promise<void> {
    if (this.#begun) await this.#store.endBoot(this.bootId);
  }

  /** Every guard, then the claim. True: the caller re-drives now. */
  async approve(ask: ContinueAsk): Promise<boolean> {
    if (!this.settings.enabled) return false;
    const session = sessionKeyString(ask.key);
    const now = this.#now();
    const refusal = continueRefusal(
      {
        cause: ask.cause,
        ageMs: now.getTime() - Date.parse(ask.at),
        sequence: ask.sequence,
        bootCount: this.#redriven,
        sessionCount: this.#perSession.get(session) ?? 0,
        halted: ask.halted,
        turnInFlight: ask.turnInFlight,
        breakerOpen: this.#breakerOpen,
      },
      this.settings,
    );
    if (refusal !== undefined) return this.#refuse(session, ask, refusal);
    const claimed = await this.#store
      .claimInterruption(ask.key, {
        interruption: ask.interruption,
        owner: this.bootId,
        now: now.toISOString(),
        expiresAt: new Date(now.getTime() + CLAIM_TTL_MS).toISOString(),
      })
      .catch((error: unknown) => String(error));
    if (typeof claimed === "string") return this.#refuse(session, ask, `the claim could not be recorded: ${claimed}`);
    if (!claimed) return this.#refuse(session, ask, "another daemon holds the claim on this interruption");
    this.#redriven++;
    this.#perSession.set(session, (this.#perSession.get(session) ?? 0) + 1);
    this.#log(
      `auto-continue: session ${session}: re-driving turn ${ask.interruption} (${ask.cause}, attempt ${ask.sequence + 1})`,
    );
    return true;
  }

  #refuse(session: string, ask: ContinueAsk, why: string): false {
    this.#refused++;
    this.#log(`auto-continue: session ${session}: turn ${ask.interruption} (${ask.cause}) not re-driven: ${why}`);
    return false;
  }
}
