/**
 * SessionHost: the registry of live sessions. One actor per live session, created on first
 * touch by rebuilding from the store (same id, history, owner), evicted when quiet for the idle
 * timeout. Resolves both path shapes, creates and deletes sessions, resumes committed inbox
 * work after a restart, and drives the shutdown of turns.
 */
import { type AclPatch, type Principal, type SessionAcl, type SessionAction, allows, mergeAcl } from "../core/acl.ts";
import { SparError } from "../core/errors.ts";
import { newSessionId } from "../core/ids.ts";
import type { ModelSpec, ToolSpec } from "../core/model.ts";
import type { SubagentSpec } from "../core/subagents.ts";
import { DEFAULT_SESSION_ID, LOCAL_CALLER, type SessionKey, sessionKeyString } from "../core/session-key.ts";
import type { SessionRecord, Store } from "../core/session-store.ts";
import type { PermissionSettings } from "./gated-tools.ts";
import type { PricingTable } from "./pricing-table.ts";
import { PlanFiles } from "../plans/plan-files.ts";
import { type ActorContext, SessionActor } from "./session-actor.ts";
import { DEFAULT_INBOX_CAPS, type InboxCaps } from "../core/inbox-room.ts";
import type { WorkerPool } from "./worker-pool.ts";
import type { AutoContinuer } from "./auto-continuer.ts";
import type { GuardrailConfig, GuardrailName } from "../core/guardrails.ts";
import { ZERO_TIME } from "../core/zero-time.ts";
import type { ExecutorFactory } from "./executor.ts";
import type { DigestSettings } from "../core/digest.ts";
import { turnExecutor } from "./turn-executor.ts";
import { MAX_WAKE_DELAY_MS, type ScheduledWake, foldWakeLoop } from "../core/wake-loop.ts";
import { WakeTimers } from "./wake-timers.ts";
import { readAllRows } from "./history.ts";
import type { SessionCluster } from "../core/session-cluster.ts";
import { LeaseKeeper, type LeaseSettings } from "./lease-keeper.ts";
import { FollowerFeeds } from "./follower-feeds.ts";

export interface HostConfig {
  /** Permission mode, approval timeout and config patterns every live session starts from. */
  permissions: PermissionSettings;
  app: string;
  agentName: string;
  multiSession: boolean;
  model: ModelSpec;
  maxSteps: number;
  idleTimeoutMs: number;
  /** Watchdog mode and cost ceilings every session runs under. */
  guardrails: GuardrailConfig;
  /** What one session's inbox may hold waiting for a turn (default DEFAULT_INBOX_CAPS). */
  inbox?: InboxCaps;
  /** An execution still running this long after it started is cancelled (cause `deadline`); 0: none. */
  turnDeadlineMs?: number;
  /** The configured subagents (D351); absent: none. */
  subagents?: readonly SubagentSpec[];
  /** The root of the sessions' plan directories (D358); absent: no plans (replan answers 501). */
  plansDir?: string;
  /** How large tool results are reduced before the model reads them (D352); absent: unchanged. */
  digest?: DigestSettings;
  /** The loop-control tools are answered and scheduled wakes fire (D362); absent or false: neither. */
  wakeLoop?: boolean;
}

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export interface ListedSession {
  record: SessionRecord;
  active: boolean;
}

export class SessionHost {
  readonly config: HostConfig;
  readonly #store: Store;
  readonly #actors = new Map<string, SessionActor>();
  /** Sessions whose DELETE is under way: a concurrent DELETE is a repeat (500), not a second 204. */
  readonly #deleting = new Set<string>();
  readonly #loading = new Map<string, Promise<SessionActor>>();
  /** Session id -> apps holding it: every session in the store (this daemon alone writes it). */
  readonly #appsById = new Map<string, Set<string>>();
  readonly #context: ActorContext;
  readonly #logger: Logger;
  readonly #pool: WorkerPool;
  readonly #executorFor: ExecutorFactory;
  #shuttingDown = false;
  #scriptCursor = 0;
  readonly #announced = new Set<string>();
  #sweepTimer: ReturnType<typeof setInterval> | undefined;
  /** One timer per pending scheduled wake (D360), whether or not its session is in memory. */
  readonly #wakes = new WakeTimers((key, wake) => void this.#fireWake(key, wake));

  readonly autoContinue: AutoContinuer;
  /** The leases of the sessions this daemon serves, when several daemons share the database (D487). */
  readonly #leases: LeaseKeeper | undefined;
  readonly #leaseSettings: LeaseSettings | undefined;
  /** Event streams of sessions another daemon serves (D488); present with leases. */
  readonly followers: FollowerFeeds | undefined;
  /** Sessions with work a shutdown cut (a turn in flight, queued messages): their leases lapse at close. */
  readonly #cutAtShutdown = new Set<string>();
  /** The auto-continuer recorded this run (its crash-loop breaker is set): loads may offer continues. */
  #continuesBegun = false;

  constructor(options: {
    store: Store;
    pool: WorkerPool;
    pricing: PricingTable;
    config: HostConfig;
    logger: Logger;
    autoContinue: AutoContinuer;
    turnEnded?: (status: "completed" | "failed" | "canceled") => void;
    turnRefused?: (guardrail: GuardrailName) => void;
    prepareTools?: () => Promise<void>;
    /** What runs a session's work (default: the agent's model turn). */
    executorFor?: ExecutorFactory;
    /** The tools the daemon offers a turn (a subagent's grant picks from them). */
    toolSpecs?: () => ToolSpec[];
    /** Several daemons share the store's database (D487): sessions are served under leases. */
    cluster?: { cluster: SessionCluster; lease: LeaseSettings };
  }) {
    this.autoContinue = options.autoContinue;
    this.#executorFor = options.executorFor ?? turnExecutor;
    this.config = options.config;
    this.#store = options.store;
    this.#logger = options.logger;
    this.#pool = options.pool;
    if (options.cluster) {
      this.#leaseSettings = options.cluster.lease;
      this.#leases = new LeaseKeeper(options.cluster.cluster, options.cluster.lease, {
        lost: (keys, why) => this.#lost(keys, why),
        warn: (message) => options.logger.warn(message),
      });
      this.followers = new FollowerFeeds(options.store);
    }
    this.#context = {
      store: options.store,
      pool: options.pool,
      pricing: options.pricing,
      model: options.config.model,
      agentName: options.config.agentName,
      maxSteps: options.config.maxSteps,
      nextScriptIndex: () => this.#scriptCursor++,
      now: () => new Date(),
      isShuttingDown: () => this.#shuttingDown,
      logError: (message) => options.logger.error(message),
      turnEnded: options.turnEnded ?? (() => {}),
      permissions: options.config.permissions,
      guardrails: options.config.guardrails,
      autoContinue: options.autoContinue,
      turnRefused: options.turnRefused ?? (() => {}),
      prepareTools: options.prepareTools ?? (() => Promise.resolve()),
      inboxCaps: options.config.inbox ?? DEFAULT_INBOX_CAPS,
      turnDeadlineMs: options.config.turnDeadlineMs ?? 0,
      subagents: options.config.subagents ?? [],
      toolSpecs: options.toolSpecs ?? (() => []),
      ...(options.config.plansDir === undefined ? {} : { plans: new PlanFiles(options.config.plansDir) }),
      ...(options.config.digest ? { digest: options.config.digest } : {}),
      ...(options.config.wakeLoop ? { wakeLoop: this.#wakes } : {}),
      announceOnce: (what) => {
        if (this.#announced.has(what)) return false;
        this.#announced.add(what);
        return true;
      },
    };
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  get liveCount(): number {
    return this.#actors.size;
  }

  /**
   * The `wake_loops` readiness aggregate (D363): failed only when every live wake loop (a session
   * in memory that has scheduled a wake) has failed three turns in a row with no clean turn since;
   * no live loop is ready. Sessions that never scheduled a wake do not count.
   */
  wakeLoopsFailed(threshold = 3): boolean {
    let counted = 0;
    for (const actor of this.#actors.values()) {
      // A guardrail-halted session counts neither as a failure nor as clearing one.
      if (!actor.isLoop || actor.guards.halted) continue;
      if (actor.failedInARow < threshold) return false;
      counted++;
    }
    return counted > 0;
  }

  /** Subscribers attached to live sessions' feeds. */
  get subscriberCount(): number {
    let count = 0;
    for (const actor of this.#actors.values()) count += actor.feed.subscriberCount;
    return count + (this.followers?.subscriberCount ?? 0);
  }

  get store(): Store {
    return this.#store;
  }

  /** Create the bootstrap session if needed and drain inbox work committed before a restart. */
  async start(): Promise<void> {
    await this.#leases?.start();
    for (const record of await this.#store.listSessions()) this.#index(record, true);
    const bootstrap = { app: this.config.app, id: DEFAULT_SESSION_ID };
    if (!(await this.#store.getSession(bootstrap))) await this.#createBootstrap();
    for (const key of await this.#store.sessionsAwaitingTurn()) {
      if (!this.#served(key)) continue;
      const actor = await this.tryActor(key);
      if (actor === undefined) continue;
      this.#logger.info(
        `session ${sessionKeyString(key)}: draining ${actor.pendingCount} inbox message(s) committed before the restart`,
      );
      actor.schedule();
    }
    await this.#offerRestartContinues();
    if (this.config.wakeLoop) await this.#armPendingWakes();
    const sweepEvery = Math.max(50, Math.min(this.config.idleTimeoutMs / 2, 30_000));
    this.#sweepTimer = setInterval(() => this.evictIdle(), sweepEvery);
  }

  /**
   * Sessions active within the freshness window may hold a turn the restart cut: rebuild them
   * and offer each cut turn to auto-continue (its guards decide).
   */
  async #offerRestartContinues(): Promise<void> {
    await this.autoContinue.begin();
    this.#continuesBegun = true;
    const settings = this.autoContinue.settings;
    if (!settings.enabled) return;
    const since = Date.now() - settings.freshnessMs;
    for (const record of await this.#store.listSessions()) {
      const key = { app: record.app, id: record.id };
      if (!this.#served(key) || Date.parse(record.lastTouchedAt) < since) continue;
      try {
        await (await this.tryActor(key))?.offerRestartContinue();
      } catch (error) {
        this.#logger.error(`session ${sessionKeyString(key)}: auto-continue after restart: ${String(error)}`);
      }
    }
  }

  /**
   * Boot (D360): every session whose latest schedule has not fired gets its timer; one due while
   * the daemon was down fires at once. A schedule is at most 7 days ahead and its turn touched the
   * session, so only sessions touched within that horizon (and a day's margin) are read.
   */
  async #armPendingWakes(): Promise<void> {
    const since = Date.now() - MAX_WAKE_DELAY_MS - 24 * 60 * 60 * 1000;
    for (const record of await this.#store.listSessions()) {
      const key = { app: record.app, id: record.id };
      if (!this.#served(key) || record.abort !== undefined || Date.parse(record.lastTouchedAt) < since) continue;
      try {
        const live = this.#actors.get(sessionKeyString(key));
        if (live && !live.isLoop) continue;
        const { pending } = foldWakeLoop(await readAllRows(this.#store, key));
        if (pending) this.#wakes.arm(key, pending);
      } catch (error) {
        this.#logger.error(`session ${sessionKeyString(key)}: reading its scheduled wake: ${String(error)}`);
      }
    }
  }

  /** A scheduled wake is due: its session (rebuilt if evicted) queues the wake's prompt. */
  async #fireWake(key: SessionKey, wake: ScheduledWake): Promise<void> {
    // Stopping: the wake stays pending in the log and the next boot fires it.
    if (this.#shuttingDown) return;
    try {
      await (await this.tryActor(key))?.fireScheduledWake(wake);
    } catch (error) {
      this.#logger.error(`session ${sessionKeyString(key)}: scheduled wake ${wake.id}: ${String(error)}`);
    }
  }

  /** Resolve a path's session: qualified when `app` is given, else the shortcut by id alone. */
  async resolve(app: string | undefined, id: string): Promise<SessionKey> {
    await this.#refreshIndex(app, id);
    return this.#pick(app, id, () => true);
  }

  /** Whether this daemon serves a session with this key (no ACL: the daemon's own bookkeeping asks). */
  has(key: SessionKey): boolean {
    return (this.#appsById.get(key.id)?.has(key.app) ?? false) && this.#served(key);
  }

  /**
   * Resolve a path's session for a caller who wants to `action` it. With multi-session every
   * session carries an ACL: a session the caller may not act on answers exactly like a missing
   * one, and a shortcut id only counts the apps whose session the caller may read.
   */
  async authorize(
    app: string | undefined,
    id: string,
    principal: Principal,
    action: SessionAction,
  ): Promise<SessionKey> {
    if (!this.config.multiSession) return this.resolve(app, id);
    await this.#refreshIndex(app, id);
    // Records not in memory are read first (a live session's is at hand: no read, no wait). With
    // other daemons on the database every record is read: another may have changed its ACL.
    const missing: SessionKey[] = [];
    for (const candidate of this.#appsById.get(id) ?? []) {
      const key = { app: candidate, id };
      if (this.#leases !== undefined || !this.#liveRecord(key)) missing.push(key);
    }
    if (missing.length > 0) await Promise.all(missing.map((key) => this.#rememberRecord(key)));
    const key = this.#pick(app, id, (candidate) => {
      const record = this.#liveRecord(candidate);
      return record !== undefined && allows(record, principal, "read");
    });
    const record = this.#liveRecord(key);
    if (!record || !allows(record, principal, action)) throw this.#missing(app, id);
    return key;
  }

  /**
   * PATCH an ACL: merged and committed one at a time per session (so concurrent PATCHes on
   * different lists both land), applied in memory only after the store committed it (a failed
   * write changes nothing and answers 500).
   */
  updateAcl(key: SessionKey, patch: AclPatch): Promise<SessionAcl> {
    const name = sessionKeyString(key);
    const update = (this.#aclUpdates.get(name) ?? Promise.resolve()).then(async () => {
      // With other daemons the stored ACL is merged, never a copy another daemon's PATCH made stale (D528).
      const current = this.#leases === undefined ? await this.record(key) : await this.#rememberRecord(key);
      if (!current) throw this.#missing(key.app, key.id);
      const merged = mergeAcl(current, patch);
      if (!merged.ok) throw new SparError("bad_request", merged.error);
      const viewers = [...merged.value.viewers];
      const contributors = [...merged.value.contributors];
      try {
        await this.#store.setAcl(key, viewers, contributors);
      } catch (error) {
        throw new SparError(
          "persistence_failed",
          `ACL not saved, nothing changed: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      this.#actors.get(name)?.adoptAcl(viewers, contributors);
      const cached = this.#recordCache.get(name);
      if (cached) this.#recordCache.set(name, { ...cached, viewers, contributors });
      return { owner: current.owner, viewers, contributors };
    });
    this.#aclUpdates.set(
      name,
      update.then(
        () => undefined,
        () => undefined,
      ),
    );
    return update;
  }

  /** The durable row of a session (live copy when loaded), for ACL reads. */
  async record(key: SessionKey): Promise<SessionRecord | undefined> {
    return this.#liveRecord(key) ?? (await this.#rememberRecord(key));
  }

  #missing(app: string | undefined, id: string): SparError {
    return new SparError(
      "not_found",
      app === undefined ? `session not found: ${id}` : `session not found: ${app}/${id}`,
    );
  }

  #pick(app: string | undefined, id: string, visible: (key: SessionKey) => boolean): SessionKey {
    const apps = this.#appsById.get(id);
    if (app !== undefined) {
      const key = { app, id };
      if (!apps?.has(app) || !this.#served(key) || !visible(key)) throw this.#missing(app, id);
      return key;
    }
    const matches = [...(apps ?? [])]
      .map((candidate) => ({ app: candidate, id }))
      .filter((key) => this.#served(key) && visible(key));
    if (matches.length > 1)
      throw new SparError("conflict", `session id ${id} exists in more than one app; use /sessions/{app}/${id}`);
    const match = matches[0];
    if (!match) throw this.#missing(undefined, id);
    return match;
  }

  /** The live actor for a session, rebuilt from the store on first touch. */
  async actor(key: SessionKey): Promise<SessionActor> {
    const name = sessionKeyString(key);
    const live = this.#actors.get(name);
    if (live) return live;
    const loading = this.#loading.get(name);
    if (loading) return loading;
    const load = (async () => {
      await this.#takeLease(key);
      try {
        const record = await this.#store.getSession(key);
        if (!record) throw new SparError("not_found", `session not found: ${name}`);
        const actor = await SessionActor.load(this.#context, record, this.#executorFor);
        this.#actors.set(name, actor);
        if (this.#leases !== undefined) void this.#carryOn(actor);
        return actor;
      } catch (error) {
        this.#releaseIfUnused(key);
        throw error;
      }
    })().finally(() => this.#loading.delete(name));
    this.#loading.set(name, load);
    return load;
  }

  /**
   * The live actor when this daemon serves the session or can take it now; undefined when another
   * daemon holds its lease (D487).
   */
  async tryActor(key: SessionKey): Promise<SessionActor | undefined> {
    try {
      return await this.actor(key);
    } catch (error) {
      if (isHeldElsewhere(error)) return undefined;
      throw error;
    }
  }

  /** Whether this daemon holds the session's lease (always, without other daemons). */
  holds(key: SessionKey): boolean {
    return this.#leases === undefined || this.#leases.holds(key);
  }

  /** With other daemons: take the session's lease or throw `conflict` naming its holder. */
  async #takeLease(key: SessionKey): Promise<void> {
    if (this.#leases === undefined) return;
    let outcome = await this.#leases.acquire(key);
    // No holder: the holder let go meanwhile (ask again), or another daemon deleted the session.
    if (!outcome.held && outcome.holder === "" && (await this.#store.getSession(key)) !== undefined)
      outcome = await this.#leases.acquire(key);
    if (outcome.held) {
      if (outcome.taken) await this.#leaseTaken(key);
      return;
    }
    if (outcome.holder === "") {
      this.#index(key, false);
      throw this.#missing(key.app, key.id);
    }
    throw heldElsewhere(key, outcome.holder);
  }

  /** A lease just taken: the daemon's layer reads what it keeps of the sessions it covers first (D493). */
  async #leaseTaken(key: SessionKey): Promise<void> {
    const leases = this.#leases;
    const taken = this.#leaseSettings?.taken;
    if (leases === undefined || taken === undefined) return;
    try {
      await taken(leases.scope(key));
    } catch (error) {
      await leases.release(key, false);
      throw error;
    }
  }

  /** Let a session's lease go once no live session it covers remains here (D492). */
  #releaseIfUnused(key: SessionKey): void {
    const leases = this.#leases;
    if (leases === undefined) return;
    const scope = sessionKeyString(leases.scope(key));
    for (const actor of this.#actors.values()) if (sessionKeyString(leases.scope(actor.key)) === scope) return;
    void leases.release(key, false);
  }

  /**
   * With other daemons, a session loaded here may be one whose daemon died (D532), whatever took
   * its lease (a request, a stream, the sweep): its queued messages run, and a turn the death cut
   * is offered to auto-continue (its own age against the freshness window).
   */
  async #carryOn(actor: SessionActor): Promise<void> {
    actor.schedule();
    // Before the run is recorded (the crash-loop breaker counted), boot offers these itself. The
    // offer weighs the cut turn's own age against the freshness window: the session's touch may
    // not have reached the store before its daemon died.
    if (!this.#continuesBegun || !this.autoContinue.settings.enabled) return;
    try {
      await actor.offerRestartContinue();
    } catch (error) {
      this.#logger.error(`session ${sessionKeyString(actor.key)}: auto-continue after a takeover: ${String(error)}`);
    }
  }

  /** Sessions this daemon lost (another daemon holds their leases now): stop serving them here. */
  #lost(keys: SessionKey[], why: string): void {
    const lost = new Set(keys.map(sessionKeyString));
    for (const [name, actor] of [...this.#actors]) {
      if (this.#leases === undefined || !lost.has(sessionKeyString(this.#leases.scope(actor.key)))) continue;
      this.#logger.warn(`session ${name}: no longer served here: ${why}`);
      this.#actors.delete(name);
      this.#pool.forget(actor.conversationKey);
      actor.feed.closeAll("the session moved to another spar daemon; reconnect to resume");
      void actor.cancelTurn().catch(() => {});
      actor.evicted();
    }
  }

  /**
   * Take over sessions whose holder died (their leases lapsed, D487): each is rebuilt here, its
   * queued messages run and a turn the death cut is offered to auto-continue. Resolves to those taken.
   */
  async takeOverLapsed(limit = 50): Promise<SessionKey[]> {
    const cluster = this.#leases === undefined ? undefined : this.#store.cluster;
    if (cluster === undefined || this.#shuttingDown) return [];
    const taken: SessionKey[] = [];
    for (const key of await cluster.lapsedLeases(limit)) {
      if (!this.#served(key) || this.#actors.has(sessionKeyString(key))) continue;
      try {
        const actor = await this.tryActor(key);
        if (actor === undefined) continue;
        this.#index(key, true);
        this.#logger.info(`session ${sessionKeyString(key)}: taken over (its daemon's lease lapsed)`);
        taken.push(key);
        actor.schedule();
        await actor.offerRestartContinue();
      } catch (error) {
        this.#logger.error(`session ${sessionKeyString(key)}: taking it over: ${String(error)}`);
      }
    }
    return taken;
  }

  /** The bootstrap session; with other daemons, one of them may create it first. */
  async #createBootstrap(): Promise<void> {
    try {
      await this.createSession({ id: DEFAULT_SESSION_ID, owner: LOCAL_CALLER, viewers: [], contributors: [] });
    } catch (error) {
      if (!(this.#leases !== undefined && error instanceof SparError && error.code === "conflict")) throw error;
      this.#index({ app: this.config.app, id: DEFAULT_SESSION_ID }, true);
    }
  }

  /**
   * With other daemons: a session id this daemon does not know is looked up in the store (another
   * may have created it); one it knows is checked when the daemon loads or authorizes it.
   */
  async #refreshIndex(app: string | undefined, id: string): Promise<void> {
    if (this.#leases === undefined) return;
    const apps = this.#appsById.get(id);
    if (apps !== undefined && (app === undefined || apps.has(app))) return;
    const keys = await this.#store.findSessionsById(id);
    const present = new Set(keys.map((key) => key.app));
    for (const app of this.#appsById.get(id) ?? []) if (!present.has(app)) this.#index({ app, id }, false);
    for (const key of keys) if (!this.#appsById.get(id)?.has(key.app)) this.#index(key, true);
  }

  /** Create a session owned by `owner`. 501 without a factory (single-session mode). */
  async createSession(request: {
    app?: string;
    id?: string;
    owner: string;
    viewers: string[];
    contributors: string[];
  }): Promise<SessionRecord> {
    const id = request.id ?? newSessionId();
    const app = request.app ?? this.config.app;
    if (!this.config.multiSession && id !== DEFAULT_SESSION_ID) {
      throw new SparError(
        "not_implemented",
        "this daemon serves one session; start it with --multi-session to create sessions",
      );
    }
    const now = new Date().toISOString();
    const record: SessionRecord = {
      app,
      id,
      owner: request.owner,
      viewers: request.viewers,
      contributors: request.contributors,
      createdAt: now,
      lastTouchedAt: ZERO_TIME,
    };
    await this.#store.createSession(record);
    this.#index(record, true);
    await this.#takeLease(record);
    // docs/agent.md#session-states: a created session is active (listed so) until idle eviction. Its log
    // and inbox are empty: the actor is built from the record, not read back (unless a request
    // that found the new row began loading it meanwhile).
    const name = sessionKeyString(record);
    if (!this.#actors.has(name) && !this.#loading.has(name)) {
      const live = { ...record, viewers: [...record.viewers], contributors: [...record.contributors] };
      this.#actors.set(name, SessionActor.fresh(this.#context, live, this.#executorFor));
    }
    await this.actor({ app, id });
    return record;
  }

  /**
   * Delete a session: 403 for the bootstrap session, 500 when already deleted (to a caller who
   * could have deleted it; anyone else gets the masked 404, D161).
   */
  async deleteSession(app: string | undefined, id: string, principal: Principal): Promise<void> {
    let key: SessionKey;
    try {
      key = await this.authorize(app, id, principal, "admin");
    } catch (error) {
      if (error instanceof SparError && error.code === "not_found" && (await this.#deletedFor(app, id, principal))) {
        throw new SparError("persistence_failed", `session ${id} was already deleted`);
      }
      throw error;
    }
    // Only this daemon's bootstrap session: a session another app named `default` is deletable.
    if (key.app === this.config.app && key.id === DEFAULT_SESSION_ID)
      throw new SparError("forbidden", "the bootstrap session default cannot be deleted");
    const name = sessionKeyString(key);
    if (this.#deleting.has(name)) throw new SparError("persistence_failed", `session ${id} was already deleted`);
    this.#deleting.add(name);
    try {
      const actor = this.#actors.get(name);
      if (actor) {
        await actor.retire();
        actor.feed.closeAll("session deleted");
        this.#actors.delete(name);
        this.#pool.forget(actor.conversationKey);
      }
      this.#wakes.clear(key);
      const removed = await this.#store.deleteSession(key);
      this.#index(key, false);
      if (!removed) throw new SparError("persistence_failed", `session ${id} was already deleted`);
    } finally {
      this.#deleting.delete(name);
    }
  }

  /** A tombstone of this id (in `app`, or any app on the shortcut) that this caller could have deleted. */
  async #deletedFor(app: string | undefined, id: string, principal: Principal): Promise<boolean> {
    const deleted = (await this.#store.deletedSessions(id)).filter(
      (row) => (app === undefined || row.app === app) && this.#served({ app: row.app, id }),
    );
    return deleted.some(
      (row) => !this.config.multiSession || principal.admin || (row.owner !== "" && row.owner === principal.identity),
    );
  }

  /** Sessions a caller may see: all without multi-session or for admins, else those it may read. */
  async list(principal?: Principal): Promise<ListedSession[]> {
    const records = await this.#store.listSessions();
    return records
      .filter((record) => this.#served(record))
      .filter(
        (record) =>
          !this.config.multiSession ||
          principal === undefined ||
          allows(this.#leases === undefined ? (this.#liveRecord(record) ?? record) : record, principal, "read"),
      )
      .map((record) => {
        const live = this.#actors.get(sessionKeyString(record));
        return { record: live?.record ?? record, active: live !== undefined };
      });
  }

  /**
   * Drop actors that are quiet and idle past the timeout, and the turn workers' copies of their
   * conversations; they rebuild from the store on next touch.
   */
  evictIdle(now: number = Date.now()): number {
    let evicted = 0;
    for (const [name, actor] of this.#actors) {
      if (actor.isQuiet() && now - actor.lastActivity >= this.config.idleTimeoutMs) {
        this.#actors.delete(name);
        this.#pool.forget(actor.conversationKey);
        actor.evicted();
        this.#releaseIfUnused(actor.key);
        evicted++;
      }
    }
    return evicted;
  }

  /** Draining starts: refuse new work (injects, wakes, queued turns); the turns in flight run on. */
  refuseNewWork(): void {
    this.#shuttingDown = true;
  }

  /** The sessions with a turn in flight now, each with a promise resolving once that turn has ended. */
  turnsInFlight(): Array<{ key: SessionKey; settled: Promise<void> }> {
    return [...this.#actors.values()]
      .filter((actor) => actor.turnInFlight)
      .map((actor) => ({ key: actor.key, settled: actor.settled() }));
  }

  /** SIGTERM step 1: refuse new work, cancel every turn in flight (no drain). */
  async beginShutdown(): Promise<void> {
    this.#shuttingDown = true;
    for (const actor of this.#actors.values())
      if (actor.turnInFlight || actor.pendingCount > 0) this.#cutAtShutdown.add(sessionKeyString(actor.key));
    await Promise.all([...this.#actors.values()].map((actor) => actor.cancelTurn()));
  }

  /**
   * Draining (svc's SIGTERM): refuse new work as a shutdown does, and resolve once every turn in
   * flight has ended by itself (true) or `windowMs` has passed (false); beginShutdown cancels the rest.
   */
  async drain(windowMs: number): Promise<boolean> {
    this.refuseNewWork();
    const settled = Promise.all([...this.#actors.values()].map((actor) => actor.settled())).then(() => true);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), windowMs);
    });
    try {
      return await Promise.race([settled, expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Shutdown, after the listener drained: background subagents get `windowMs` to end by
   * themselves, then the stragglers are stopped and logged (docs/agent.md#stopping).
   */
  async drainSubagents(windowMs: number): Promise<void> {
    const drained = await Promise.all([...this.#actors.values()].map((actor) => actor.subagents.drain(windowMs)));
    const stragglers = drained.flat();
    if (stragglers.length > 0)
      this.#logger.warn(`subagents still running after ${windowMs} ms were stopped: ${stragglers.join(", ")}`);
  }

  /** Hang up every subscriber of every live session. */
  closeStreams(reason: string): void {
    for (const actor of this.#actors.values()) actor.feed.closeAll(reason);
    this.followers?.closeAll(reason);
  }

  async close(): Promise<void> {
    if (this.#sweepTimer) clearInterval(this.#sweepTimer);
    this.#wakes.close();
    // A session whose work the shutdown cut goes to another daemon at once; the rest are let go.
    await this.#leases?.close((key) => this.#cutAtShutdown.has(sessionKeyString(key)));
    await this.#pool.close();
    await this.#store.close();
  }

  /** Records of sessions not in memory, read once per authorization burst. */
  readonly #recordCache = new Map<string, SessionRecord>();
  /** The ACL update in progress per session; the next one waits for it. */
  readonly #aclUpdates = new Map<string, Promise<void>>();

  #liveRecord(key: SessionKey): SessionRecord | undefined {
    const name = sessionKeyString(key);
    return this.#actors.get(name)?.record ?? this.#recordCache.get(name);
  }

  async #rememberRecord(key: SessionKey): Promise<SessionRecord | undefined> {
    const record = await this.#store.getSession(key);
    const name = sessionKeyString(key);
    if (record) this.#recordCache.set(name, record);
    else this.#recordCache.delete(name);
    // Another daemon may have changed the ACL (D528): the live copy follows the stored one.
    if (record && this.#leases !== undefined) this.#actors.get(name)?.adoptAcl(record.viewers, record.contributors);
    // Or deleted the session (D533): it is no longer served here.
    if (!record && this.#leases !== undefined) this.#goneElsewhere(key);
    return record;
  }

  /** A session another daemon deleted while this one served it: its actor, streams and lease go. */
  #goneElsewhere(key: SessionKey): void {
    const name = sessionKeyString(key);
    const actor = this.#actors.get(name);
    this.#index(key, false);
    if (actor === undefined) return;
    this.#logger.info(`session ${name}: deleted on another daemon; no longer served here`);
    this.#actors.delete(name);
    this.#pool.forget(actor.conversationKey);
    this.#wakes.clear(key);
    actor.feed.closeAll("session deleted");
    void actor.retire().catch(() => {});
    actor.evicted();
    this.#releaseIfUnused(key);
  }

  #index(key: SessionKey, present: boolean): void {
    this.#recordCache.delete(sessionKeyString(key));
    const apps = this.#appsById.get(key.id) ?? new Set<string>();
    if (present) apps.add(key.app);
    else apps.delete(key.app);
    if (apps.size > 0) this.#appsById.set(key.id, apps);
    else this.#appsById.delete(key.id);
  }

  #served(key: SessionKey): boolean {
    return this.config.multiSession || (key.app === this.config.app && key.id === DEFAULT_SESSION_ID);
  }
}

/** A session another daemon serves (D487): 409 naming its holder, for operations not relayed to it. */
function heldElsewhere(key: SessionKey, holder: string): SparError {
  return new SparError(
    "conflict",
    `session ${sessionKeyString(key)} is served by another spar daemon (${holder || "unknown"}); send this request to that daemon, or retry once its lease lapses`,
    { held_by: holder },
  );
}

export function isHeldElsewhere(error: unknown): boolean {
  return error instanceof SparError && error.code === "conflict" && typeof error.details.held_by === "string";
}
