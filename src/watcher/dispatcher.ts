/**
 * The dispatch pipeline (docs/watcher-pipeline.md#stages): signal → pull-class memo → filter →
 * dedup → storm correlation → enrichment → fit to --inject-max-bytes → sink, then bind the dedup
 * key to the session and track recovery. In per-incident mode an info-severity signal stops after
 * the filter: counted and recorded in the store, never paged (D393); a new warning goes to the
 * watchboard (watchboard.ts, D418) and only critical opens a session; a recurrence soon after its
 * incident resolved opens with `triage.regressed` (D421). Outcome records (`resolved`, `resolved.reverted`) bypass
 * filter and dedup and are appended to the bound session. Each signal is handled in its incident's
 * lane (dispatch-lanes.ts, D450): one at a time and in arrival order per incident, so a duplicate
 * never races the open of its own incident, while other incidents go on beside it (a slow sink or
 * enrichment holds its own incident only); a signal the full lanes refuse is counted, logged and
 * stored, never dropped silently. The sink may be the
 * delivery queue: an open it took over (`queued`) is bound when the queue reports its session
 * (`bindQueuedOpen`), and meanwhile the incident's duplicates open nothing (`openPending`, then
 * the binding waiting in the lane, D455). Each
 * signal's handling is a `watcher event` span, an incident it opens a `watcher incident` span
 * (watcher-spans.ts).
 */
import { sha256Hex } from "../surfaces/http/caller-auth.ts";
import type { Logger } from "../telemetry/logger.ts";
import { DedupCache, type DedupEntry, type DedupIncident, dedupKey } from "./core/dedup-cache.ts";
import { type FilterSettings, decideFilter } from "./core/filter.ts";
import { fingerprint } from "./core/fingerprint.ts";
import { fitPayload } from "./core/fit.ts";
import type { Resolution } from "./core/regression.ts";
import { type OccurrenceRow, type Route, rowOf } from "./core/occurrence.ts";
import { buildIncidentPayload, buildResolvedPayload } from "./core/payload.ts";
import { PullClassMemo } from "./core/pull-class.ts";
import { canonicalReasonForEvent } from "./core/reasons.ts";
import { type ClearanceObservation, type RecoveryOutcome, RecoveryTracker } from "./core/recovery.ts";
import { DispatchLanes, LaneFull, type LaneSettings } from "./dispatch-lanes.ts";
import { type Severity, type Signal, outranks } from "./core/signal.ts";
import type { IncidentSink, OpenBinding } from "./core/sink.ts";
import type { Ancestor } from "./core/storm.ts";
import { StormHandler, type StormHandlerSettings } from "./storm-handler.ts";
import { SeverityRouter } from "./severity-router.ts";
import type { Watchboard } from "./watchboard.ts";
import type { WatcherMetrics } from "./watcher-metrics.ts";
import { IncidentLinks, inEventSpan, inWatcherSpan, signalAttributes } from "./watcher-spans.ts";

export interface DispatcherSettings {
  cluster: string;
  project?: string;
  zone: string;
  mode: "per-incident" | "shared";
  filter: FilterSettings;
  dedupWindowMs: number;
  recoveryStableForMs: number;
  /** Undefined: storm correlation off. */
  storm?: StormHandlerSettings;
  /** Severities that get an enrichment bundle. */
  enrichSeverities: ReadonlySet<Severity>;
  /** `--enrich-cap`, for a storm's radius bundle (D431); undefined: storms carry none. */
  enrichCapBytes?: number;
  injectMaxBytes: number;
  /** Per-kind severity overrides (`--severity`). */
  severityOverrides: ReadonlyMap<string, Severity>;
  /** `--triage-regress-factor` when on (needs `--store`, D421); absent or 0: no regressions. */
  regressFactor?: number;
  /** The lanes' bounds (D450); absent: DEFAULT_LANE_SETTINGS. */
  lanes?: LaneSettings;
}

/** Blast-radius keys the topology knows for a signal's object, nearest first (node, owners, namespace). */
export type TopologyLookup = (signal: Signal) => Ancestor[];

/**
 * Asks whether an incident has cleared: the sources' clearance first, then the cluster's (pod
 * Ready, node Ready); `reason` is the key's canonical reason (D437).
 */
export type ClearanceLookup = (
  uid: string,
  incident: DedupIncident,
  reason: string,
) => ClearanceObservation | undefined;

export interface DispatcherDeps {
  sink: IncidentSink;
  logger: Logger;
  metrics: WatcherMetrics;
  now?: () => number;
  enrich?: (signal: Signal) => Promise<string | undefined>;
  topology?: TopologyLookup;
  /** Nodes the topology graph knows (the storm cluster fallback's fleet, D430). */
  fleetSize?: () => number;
  clearance?: ClearanceLookup;
  dedup?: DedupCache;
  /** The occurrence store's writer (`--store`): every routed signal with its route. */
  record?: (row: OccurrenceRow) => void;
  /** Whether the delivery queue holds this key's open (then a duplicate must not open another). */
  openPending?: (key: string) => boolean;
  /** Per-incident mode's home for warnings (D418); absent: warnings open sessions. */
  watchboard?: Watchboard;
}

export type DispatchOutcome =
  | "filtered"
  | "deduped"
  | "opened"
  | "open-failed"
  | "retried"
  | "storm-formed"
  | "storm-attached"
  | "storm-pending"
  | "info-stored"
  | "escalated"
  | "watchboard"
  | "regressed"
  | "family-member"
  | "reattached"
  | "refused";

/** Tracked incidents judged per queued step of a recovery sweep. */
const SWEEP_CHUNK = 100;

/** The occurrence-store route of each dispatch outcome (filtered signals are not stored). */
const ROUTES: Record<DispatchOutcome, Route | undefined> = {
  filtered: undefined,
  deduped: "suppressed",
  opened: "injected",
  retried: "injected",
  "open-failed": "error",
  "storm-formed": "storm",
  "storm-attached": "storm-member",
  "storm-pending": "storm-member",
  "info-stored": "info-stored",
  escalated: "followup",
  watchboard: "watchboard",
  regressed: "regressed",
  "family-member": "followup",
  reattached: "followup",
  refused: "error",
};

export class Dispatcher {
  readonly dedup: DedupCache;
  readonly recovery: RecoveryTracker;
  private readonly memo = new PullClassMemo();
  private readonly storms: StormHandler | undefined;
  private readonly now: () => number;
  private readonly lanes: DispatchLanes;
  /** When the last refusal was logged (one line a minute while the lanes stay full). */
  private refusalLoggedAt = Number.NEGATIVE_INFINITY;
  /** Each incident's span, for the follow-ups delivered hours later to link back to. */
  private readonly links = new IncidentLinks();
  /** Severity routing: the watchboard, regressions, family members (D418-D422). */
  private readonly routing: SeverityRouter;
  /**
   * Keys whose queued open created its session, their binding still waiting in the lane (D455):
   * the queue no longer reports the open pending, so a duplicate ahead of the binding must not
   * open a second session.
   */
  private readonly lateBindings = new Set<string>();
  /** Recovery sweeps running: they queue their chunks one after another, so idle() waits for them. */
  private readonly sweeps = new Set<Promise<void>>();

  constructor(
    private readonly settings: DispatcherSettings,
    private readonly deps: DispatcherDeps,
  ) {
    this.now = deps.now ?? Date.now;
    this.dedup = deps.dedup ?? new DedupCache(settings.dedupWindowMs);
    this.recovery = new RecoveryTracker(settings.recoveryStableForMs);
    this.routing = new SeverityRouter(settings, deps, this.dedup);
    this.lanes = new DispatchLanes(settings.lanes, { delayed: () => deps.metrics.dispatchDelayed() });
    deps.metrics.gauge("dispatch_queued", "signals waiting in their incident's lane", () => this.lanes.queued);
    this.storms = settings.storm
      ? new StormHandler(
          settings.storm,
          { ...settings, ...deps, now: this.now, sha256Hex },
          this.dedup,
          this.recovery,
          (signal, fp) => this.incidentOf(signal, fp),
        )
      : undefined;
    for (const key of this.dedup.keys()) {
      const entry = this.dedup.get(key);
      if (entry?.incident && entry.sessionId)
        this.recovery.track(key, entry.incident.first_event ?? entry.firstSeen, this.now());
    }
  }

  /** Queue a signal in its incident's lane; resolves with what became of it once it was handled. */
  dispatch(signal: Signal): Promise<DispatchOutcome> {
    const key = dedupKey(signal.uid, canonicalReasonForEvent(signal.reason, signal.message));
    return this.lanes.run(key, () => this.handle(signal)).catch((error) => this.refuse(signal, error));
  }

  /** Wait until every queued signal and outcome has been handled, a running sweep's later chunks too. */
  async idle(): Promise<void> {
    while (this.sweeps.size > 0) await Promise.allSettled([...this.sweeps]);
    await this.lanes.idle();
  }

  /** The lanes were full (D450): counted, logged once a minute, stored as an error row; never silent. */
  private refuse(signal: Signal, error: unknown): DispatchOutcome {
    if (!(error instanceof LaneFull)) throw error;
    const { metrics, logger } = this.deps;
    metrics.dispatchRefused({ bound: error.bound });
    const now = this.now();
    if (now - this.refusalLoggedAt >= 60_000) {
      this.refusalLoggedAt = now;
      logger.error(
        `dispatch: ${error.message}; refused ${signal.reason} ${signal.kindOfObject}=${signal.namespace}/${signal.name} (counted in watcher_dispatch_refused_total)`,
      );
    }
    this.deps.record?.(rowOf(signal, "error", this.settings.cluster, now, undefined));
    return "refused";
  }

  /** One signal in its own trace (its `watcher event` span). */
  private handle(incoming: Signal): Promise<DispatchOutcome> {
    return inEventSpan(signalAttributes(incoming, this.settings.cluster), () => this.routeAndRecord(incoming));
  }

  private async routeAndRecord(incoming: Signal): Promise<DispatchOutcome> {
    const outcome = await this.route(incoming);
    const record = this.deps.record;
    const route = ROUTES[outcome];
    if (record && route) {
      const key = dedupKey(incoming.uid, canonicalReasonForEvent(incoming.reason, incoming.message));
      const entry = this.dedup.get(key);
      record(
        rowOf(
          { ...incoming, severity: this.settings.severityOverrides.get(incoming.kind) ?? incoming.severity },
          route,
          this.settings.cluster,
          this.now(),
          entry?.sessionId,
        ),
      );
    }
    return outcome;
  }

  private async route(incoming: Signal): Promise<DispatchOutcome> {
    const now = this.now();
    const signal = { ...incoming, severity: this.settings.severityOverrides.get(incoming.kind) ?? incoming.severity };
    const { metrics, logger } = this.deps;
    const pullClass = this.memo.classify(signal.uid, signal.message, now);
    metrics.eventsSeen({ reason: signal.reason, namespace: signal.namespace });
    const gate = decideFilter(signal, this.settings.filter, pullClass);
    if (gate) {
      metrics.eventsFiltered({ gate });
      logger.debug(`filter ${gate} ${signal.reason} ${signal.kindOfObject}=${signal.namespace}/${signal.name}`);
      return "filtered";
    }
    // D393: info is a record, never a page: counted and stored (with --store), no dedup entry, no
    // session. Shared mode has no routing: there every severity goes to the target session.
    if (signal.severity === "info" && this.settings.mode === "per-incident") {
      metrics.findings({ kind: signal.kind, severity: signal.severity });
      if (!this.deps.record) metrics.infoDropped({ kind: signal.kind });
      logger.debug(`info ${signal.kind} ${signal.kindOfObject}=${signal.namespace}/${signal.name} (stored, not paged)`);
      return "info-stored";
    }
    const canonical = canonicalReasonForEvent(signal.reason, signal.message);
    const key = dedupKey(signal.uid, canonical);
    const observed = this.dedup.observe(key, signal.lastSeen, now);
    const fp = fingerprint(sha256Hex, signal.kind, canonical, signal.kindOfObject, this.settings.zone);
    if (observed.outcome === "new") observed.entry.severity = signal.severity;
    if (observed.outcome === "duplicate") {
      const entry = observed.entry;
      const board = this.routing.onBoard(key, entry.sessionId);
      if (board && !observed.replay && signal.severity === "critical") return this.leaveBoard(signal, key, fp, entry);
      if (board) {
        this.routing.noteBoarded(key, signal.lastSeen);
        metrics.eventsDeduped({ reason: signal.reason, namespace: signal.namespace });
        return "deduped";
      }
      if (!observed.replay && entry.sessionId && outranks(signal.severity, entry.severity))
        return (await this.escalate(signal, fp, entry)) ? "escalated" : "deduped";
      if (!observed.replay && entry.sessionId) await this.deliverOutcome(this.recovery.recur(key, now));
      if (!observed.replay && (await this.routing.joinMember(signal, canonical, entry))) return "family-member";
      const unbound =
        !entry.sessionId &&
        !entry.storm &&
        this.settings.mode === "per-incident" &&
        !this.deps.openPending?.(key) &&
        !this.lateBindings.has(key);
      if (unbound && !observed.replay) {
        // A warning the board dropped (full) goes back to it, never to a session of its own (D418).
        const boarded = await this.routing.toBoard(signal, key, fp, now);
        if (boarded) return boarded;
        logger.info(`retry open ${signal.reason} pod=${signal.namespace}/${signal.name} (previous open failed)`);
        return (await this.openIncident(signal, key, fp, entry.count)) ? "retried" : "open-failed";
      }
      metrics.eventsDeduped({ reason: signal.reason, namespace: signal.namespace });
      logger.info(
        `dedup ${signal.reason} pod=${signal.namespace}/${signal.name} (count=${entry.count}, window active)`,
      );
      return "deduped";
    }
    metrics.findings({ kind: signal.kind, severity: signal.severity });
    if (this.storms) {
      const outcome = await this.storms.observe(signal, key, fp, canonical, now, pullClass);
      if (outcome === "storm-formed" || outcome === "storm-attached") return outcome;
    }
    return this.page(signal, key, fp, now);
  }

  /**
   * A new incident no storm took: a warning to the watchboard (D418); otherwise its session opens,
   * with `triage.regressed` when it recurs soon after it resolved (D421).
   */
  private async page(signal: Signal, key: string, fp: string, now: number): Promise<DispatchOutcome> {
    const boarded = await this.routing.toBoard(signal, key, fp, now);
    if (boarded) return boarded;
    const resolution = this.routing.takeRegression(key, now);
    const opened = await this.openIncident(signal, key, fp, 1, resolution);
    if (opened) await this.storms?.noteSession(key, opened);
    if (opened) this.routing.noteOpened(signal, key, opened);
    if (!opened) return "open-failed";
    return resolution ? "regressed" : "opened";
  }

  /** A warning on the board turned critical: it pages now, in its own session (D418). */
  private async leaveBoard(signal: Signal, key: string, fp: string, entry: DedupEntry): Promise<DispatchOutcome> {
    this.routing.release(key, entry);
    entry.severity = signal.severity;
    return (await this.openIncident(signal, key, fp, entry.count)) ? "escalated" : "open-failed";
  }

  /**
   * A duplicate above the severity its session last heard (node_pressure sustained, D378): the
   * incident's payload again, at the new severity, appended to its session once (D416).
   */
  private async escalate(signal: Signal, fp: string, entry: DedupEntry): Promise<boolean> {
    const { metrics, logger, sink } = this.deps;
    const sessionId = entry.sessionId ?? "";
    const fitted = fitPayload(
      buildIncidentPayload(signal, this.stamp(), fp, entry.count),
      this.settings.injectMaxBytes,
    );
    const appended = await sink.append(sessionId, fitted.payload);
    if (!appended.ok && !appended.queued) {
      metrics.injectErrors({ reason: signal.reason, http_code: "inject" });
      logger.error(
        `escalate ${signal.reason} ${signal.kindOfObject}=${signal.namespace}/${signal.name} failed: ${appended.error}`,
      );
      return false;
    }
    entry.severity = signal.severity;
    metrics.findings({ kind: signal.kind, severity: signal.severity });
    logger.info(
      `escalate ${signal.reason} ${signal.kindOfObject}=${signal.namespace}/${signal.name} to ${signal.severity} → sid=${sessionId}`,
    );
    return true;
  }

  private stamp(): { cluster: string; zone: string; project?: string } {
    return {
      cluster: this.settings.cluster,
      zone: this.settings.zone,
      ...(this.settings.project ? { project: this.settings.project } : {}),
    };
  }

  /** Opens the incident's session with its first payload (its `watcher incident` span); the session id bound, if any. */
  private openIncident(
    signal: Signal,
    key: string,
    fp: string,
    count: number,
    regressed?: Resolution,
  ): Promise<string | undefined> {
    const attributes = {
      "spar.watcher.fingerprint": fp,
      "spar.watcher.mode": this.settings.mode,
      "spar.watcher.count": count,
    };
    return this.links.inIncidentSpan(key, attributes, () => this.deliverIncident(signal, key, fp, count, regressed));
  }

  private async deliverIncident(
    signal: Signal,
    key: string,
    fp: string,
    count: number,
    regressed?: Resolution,
  ): Promise<string | undefined> {
    const { metrics, logger, sink } = this.deps;
    const bundle =
      this.deps.enrich && this.settings.enrichSeverities.has(signal.severity) && this.settings.mode === "per-incident"
        ? await this.deps.enrich(signal)
        : undefined;
    const opening = buildIncidentPayload(signal, this.stamp(), fp, count, bundle);
    const fitted = fitPayload(this.routing.opening(opening, regressed), this.settings.injectMaxBytes);
    if (fitted.shed.length > 0) {
      for (const shed of fitted.shed) metrics.injectShrinks({ shed });
      logger.warn(
        `dispatcher: inject payload for ${signal.namespace}/${signal.name} exceeded --inject-max-bytes=${this.settings.injectMaxBytes}; shed ${fitted.shed.join(",")} to fit`,
      );
    }
    const incident = this.incidentOf(signal, fp);
    const result = await sink.open(fitted.payload, {
      key,
      kind: signal.kind,
      reason: signal.reason,
      severity: signal.severity,
      incident,
    });
    const retrying = result.queued ? "; queued, re-sending with backoff" : "";
    if (result.id === undefined) {
      metrics.sessionCreates({ outcome: "error" });
      metrics.injectErrors({ reason: signal.reason, http_code: "session_create" });
      logger.error(`open ${signal.reason} pod=${signal.namespace}/${signal.name} failed: ${result.error}${retrying}`);
      return undefined;
    }
    metrics.sessionCreates({ outcome: "ok" });
    if (result.error) {
      metrics.injectErrors({ reason: signal.reason, http_code: "inject" });
      logger.error(
        `inject ${signal.reason} pod=${signal.namespace}/${signal.name} into ${result.id} failed: ${result.error}${retrying}`,
      );
    } else if (!result.queued) metrics.eventsInjected({ reason: signal.reason, namespace: signal.namespace });
    this.dedup.bind(key, result.id, incident);
    const entry = this.dedup.get(key);
    if (entry) entry.sourceKind = signal.kind;
    this.recovery.track(key, signal.firstSeen, this.now());
    logger.info(
      `fire ${signal.reason} pod=${signal.namespace}/${signal.name} → sid=${result.id} (mode=${this.settings.mode})`,
    );
    return result.id;
  }

  /**
   * A queued open created its session (the delivery queue reports it): bind the incident as the
   * open would have, unless the key was meanwhile bound elsewhere or forgotten.
   */
  bindQueuedOpen(binding: OpenBinding, sessionId: string): Promise<void> {
    // Unbounded: a session the sink created must be bound, or a duplicate would open another;
    // until it is, the key counts as bound (D455).
    this.lateBindings.add(binding.key);
    return this.lanes.run(
      binding.key,
      async () => {
        const { metrics, logger } = this.deps;
        const { key, incident } = binding;
        this.lateBindings.delete(key);
        metrics.sessionCreates({ outcome: "ok" });
        const entry = this.dedup.get(key);
        if (entry && !entry.sessionId) {
          this.dedup.bind(key, sessionId, incident);
          entry.sourceKind = binding.kind;
          this.recovery.track(key, incident.first_event ?? entry.firstSeen, this.now());
        }
        logger.info(
          `fire ${binding.reason} pod=${incident.namespace}/${incident.name} → sid=${sessionId} (mode=${this.settings.mode}, queued open)`,
        );
        const uid = key.slice(0, key.lastIndexOf("|"));
        this.deps.record?.({
          at: this.now(),
          route: "injected",
          kind: binding.kind,
          severity: binding.severity,
          reason: binding.reason,
          namespace: incident.namespace,
          kindOfObject: incident.kind_of_object,
          name: incident.name,
          uid,
          cluster: incident.cluster,
          sessionId,
        });
      },
      false,
    );
  }

  /** A queued first payload arrived: the incident counts as injected. */
  noteQueuedDelivery(binding: OpenBinding): void {
    this.deps.metrics.eventsInjected({ reason: binding.reason, namespace: binding.incident.namespace });
  }

  private incidentOf(signal: Signal, fp: string): DedupIncident {
    return {
      namespace: signal.namespace,
      kind_of_object: signal.kindOfObject,
      name: signal.name,
      ...(signal.container ? { container: signal.container } : {}),
      ...(signal.controllerRef ? { controller_ref: signal.controllerRef } : {}),
      ...(signal.node ? { node: signal.node } : {}),
      fingerprint: fp,
      cluster: this.settings.cluster,
      first_event: signal.firstSeen,
    };
  }

  /**
   * One recovery sweep: asks the clearance lookup about every tracked incident, each in its own
   * lane (after the signals it already holds), a chunk at a time, so signals that arrive meanwhile
   * are not held behind thousands of outcomes.
   */
  async sweepRecovery(): Promise<void> {
    const sweep = this.sweepChunks();
    this.sweeps.add(sweep);
    try {
      await sweep;
    } finally {
      this.sweeps.delete(sweep);
    }
  }

  private async sweepChunks(): Promise<void> {
    const lookup = this.deps.clearance;
    if (!lookup || !this.recovery.enabled) return;
    const keys = this.recovery.keys();
    let evicted = 0;
    for (let start = 0; start < keys.length; start += SWEEP_CHUNK) {
      const judge = async (key: string) => {
        const entry = this.dedup.get(key);
        if (!entry?.incident) {
          // D457: the dedup cache dropped it (full): nothing can resolve it any more.
          this.recovery.forget(key);
          this.deps.metrics.recoveryDrops({ cause: "evicted" });
          evicted++;
          return;
        }
        const separator = key.lastIndexOf("|");
        const observation = lookup(key.slice(0, separator), entry.incident, key.slice(separator + 1));
        await this.deliverOutcome(this.recovery.observe(key, observation, this.now()));
      };
      await Promise.all(keys.slice(start, start + SWEEP_CHUNK).map((key) => this.inLane(key, () => judge(key))));
    }
    if (evicted > 0)
      this.deps.logger.warn(
        `recovery: ${evicted} tracked incident(s) left the full dedup cache before they cleared; no resolved will follow for them (watcher_recovery_drops_total{cause="evicted"})`,
      );
  }

  /** Work in a key's lane; a full lane skips it (a sweep asks again, a late binding is re-reported). */
  private inLane(key: string, work: () => Promise<void>): Promise<void> {
    return this.lanes.run(key, work).catch((error) => {
      if (!(error instanceof LaneFull)) throw error;
      this.deps.metrics.dispatchRefused({ bound: error.bound });
    });
  }

  /** A recovery outcome in its `watcher outcome` span, linked to the incident's. */
  private async deliverOutcome(outcome: RecoveryOutcome | undefined): Promise<void> {
    if (!outcome) return;
    const attributes = { "spar.watcher.outcome.kind": outcome.kind };
    const links = this.links.linksFor(outcome.key);
    await inWatcherSpan("watcher outcome", attributes, () => this.appendOutcome(outcome), { links });
  }

  private async appendOutcome(outcome: RecoveryOutcome): Promise<void> {
    const { metrics, logger, sink } = this.deps;
    const entry = this.dedup.get(outcome.key);
    const sessionId = entry?.sessionId;
    if (!entry?.incident || !sessionId) {
      metrics.recoveryDrops({ cause: "unknown_session" });
      return;
    }
    const separator = outcome.key.lastIndexOf("|");
    const incident = entry.incident;
    const payload = buildResolvedPayload(
      outcome.kind,
      {
        canonicalReason: outcome.key.slice(separator + 1),
        namespace: incident.namespace,
        kindOfObject: incident.kind_of_object,
        name: incident.name,
        ...(incident.container ? { container: incident.container } : {}),
        uid: outcome.key.slice(0, separator),
        fingerprint: incident.fingerprint,
        cluster: incident.cluster,
        ...(incident.controller_ref ? { controllerRef: incident.controller_ref } : {}),
        firstSeen: incident.first_event ?? entry.firstSeen,
      },
      {
        resolvedAt: outcome.resolvedAt,
        stableSince: outcome.stableSince,
        resolution: outcome.resolution,
        ...(outcome.revertedAt !== undefined ? { revertedAt: outcome.revertedAt } : {}),
      },
    );
    if (outcome.kind === "resolved") metrics.recoveriesObserved({ resolution: outcome.resolution });
    else metrics.recoveriesReverted();
    this.routing.noteOutcome(outcome, sessionId, entry);
    const appended = await sink.append(sessionId, payload);
    if (!appended.ok) {
      metrics.injectErrors({ reason: payload.reason, http_code: "inject" });
      logger.error(
        `${outcome.kind} for ${incident.namespace}/${incident.name} into ${sessionId} failed: ${appended.error}${appended.queued ? "; queued, re-sending with backoff" : ""}`,
      );
      if (!appended.queued) return;
    }
    logger.info(`${outcome.kind} ${payload.reason} pod=${incident.namespace}/${incident.name} → sid=${sessionId}`);
    this.deps.record?.({
      at: this.now(),
      route: outcome.kind === "resolved" ? "resolved" : "followup",
      kind: outcome.kind,
      severity: "info",
      reason: payload.reason,
      namespace: incident.namespace,
      kindOfObject: incident.kind_of_object,
      name: incident.name,
      uid: outcome.key.slice(0, separator),
      cluster: incident.cluster,
      sessionId,
    });
    if (this.storms) await this.storms.noteOutcome(outcome);
  }
}
