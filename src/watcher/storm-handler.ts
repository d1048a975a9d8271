/**
 * The dispatcher's storm side (docs/watcher-pipeline.md#storms): correlates new incidents, opens
 * one session for a formed storm, re-binds every member to it (members with their own session get
 * `storm.member_superseded`), appends `storm.member` for late arrivals and `storm.update` as the
 * storm grows, and injects the storm's own `resolved` once its last member clears. Candidate keys
 * per incident: the registry host of a retryable pull (D429), the topology's, the mined ones with
 * --storm-mine, the cluster fallback for a lone node failure with --storm-cluster-fallback (D430).
 * A formed storm's opening payload carries its radius bundle when `--enrich` covers its severity
 * (D431). Members of one storm are handled in their own lanes (D450), so a storm's open runs once
 * (later members wait for it) and a member whose own open was still in flight when the storm
 * formed is superseded once it lands.
 */
import type { Logger } from "../telemetry/logger.ts";
import type { Sha256Hex } from "./core/fingerprint.ts";
import type { DedupCache, DedupIncident } from "./core/dedup-cache.ts";
import { fitPayload } from "./core/fit.ts";
import { goDuration } from "./core/go-time.ts";
import { buildResolvedPayload } from "./core/payload.ts";
import type { PullClass } from "./core/pull-class.ts";
import type { RecoveryOutcome, RecoveryTracker } from "./core/recovery.ts";
import type { Severity, Signal } from "./core/signal.ts";
import type { IncidentSink } from "./core/sink.ts";
import {
  type Ancestor,
  type Storm,
  type StormMember,
  type StormSettings,
  StormCorrelator,
  ancestorDisplay,
} from "./core/storm.ts";
import { externalKeys, fallbackKey, minedKeys } from "./core/storm-keys.ts";
import { stormEnriched, stormRadiusBundle } from "./core/storm-radius.ts";
import {
  buildStormMemberPayload,
  buildStormPayload,
  buildStormUpdatePayload,
  stormFingerprint,
} from "./core/storm-payloads.ts";
import type { WatcherMetrics } from "./watcher-metrics.ts";
import { inWatcherSpan } from "./watcher-spans.ts";

export interface StormContext {
  cluster: string;
  zone: string;
  injectMaxBytes: number;
  sink: IncidentSink;
  logger: Logger;
  metrics: WatcherMetrics;
  now: () => number;
  topology?: (signal: Signal) => Ancestor[];
  /** The storm fingerprint's hash (the core hashes nothing itself). */
  sha256Hex: Sha256Hex;
  /** Nodes the topology graph knows (the cluster fallback's fifth of the fleet); 0 when unknown. */
  fleetSize?: () => number;
  /** Severities `--enrich` covers, and the mode (only per-incident sessions are enriched). */
  enrichSeverities?: ReadonlySet<Severity>;
  mode?: "per-incident" | "shared";
  /** The storm radius bundle's byte cap (`--enrich-cap`); undefined: storms are not enriched. */
  enrichCapBytes?: number;
}

export interface StormHandlerSettings extends StormSettings {
  mine: boolean;
  /** `--storm-cluster-fallback` (D430). */
  clusterFallback?: boolean;
}

export class StormHandler {
  private readonly correlator: StormCorrelator;
  private readonly pendingMembers = new Map<string, StormMember>();
  /** Storm opens in flight, by storm id: a member that attaches meanwhile waits for it. */
  private readonly opening = new Map<string, Promise<void>>();

  constructor(
    private readonly settings: StormHandlerSettings,
    private readonly context: StormContext,
    private readonly dedup: DedupCache,
    private readonly recovery: RecoveryTracker,
    private readonly incidentOf: (signal: Signal, fp: string) => DedupIncident,
  ) {
    this.correlator = new StormCorrelator(settings);
    context.metrics.gauge("storms_active", "open storms", () => this.correlator.active.length);
  }

  async observe(
    signal: Signal,
    key: string,
    fp: string,
    canonical: string,
    now: number,
    pullClass: PullClass = "unknown",
  ): Promise<"storm-formed" | "storm-attached" | "storm-pending" | "none"> {
    const member: StormMember = {
      key,
      fingerprint: fp,
      reason: signal.reason,
      canonicalReason: canonical,
      namespace: signal.namespace,
      kindOfObject: signal.kindOfObject,
      name: signal.name,
      uid: signal.uid,
      severity: signal.severity,
      firstSeen: signal.firstSeen,
      lastSeen: signal.lastSeen,
      zone: this.context.zone,
    };
    const declared = this.context.topology?.(signal) ?? [];
    const mined = this.settings.mine ? minedKeys(signal) : [];
    const { cluster, fleetSize } = this.context;
    const fallback = this.settings.clusterFallback
      ? fallbackKey(signal, declared, cluster, this.settings.min, fleetSize?.() ?? 0)
      : undefined;
    const result = this.correlator.observe(member, declared, mined, now, {
      external: externalKeys(signal, pullClass),
      ...(fallback ? { fallback } : {}),
    });
    if (result.outcome === "none") {
      this.pendingMembers.set(key, member);
      return "none";
    }
    this.bindMember(member, signal, fp);
    if (result.outcome === "formed") {
      await this.ensureOpen(result.storm);
      return "storm-formed";
    }
    await this.attach(result.storm, member);
    return "storm-attached";
  }

  /**
   * The member opened its own session. Before any storm claimed it, the storm's open supersedes
   * it later; a storm that claimed it while the open was in flight supersedes it now (D450).
   */
  async noteSession(key: string, sessionId: string): Promise<void> {
    const pending = this.pendingMembers.get(key);
    if (pending) {
      pending.sessionId = sessionId;
      return;
    }
    const storm = this.correlator.stormOf(key);
    const member = storm?.members.find((candidate) => candidate.key === key);
    if (!storm || !member) return;
    member.sessionId = sessionId;
    // Still opening: its open's own pass supersedes the member.
    if (!storm.sessionId || storm.sessionId === sessionId) return;
    await this.supersede(storm, member, storm.sessionId);
  }

  private async supersede(storm: Storm, member: StormMember, stormSession: string): Promise<void> {
    const { sink, metrics, cluster, sha256Hex } = this.context;
    const entry = this.dedup.get(member.key);
    if (entry) entry.sessionId = stormSession;
    metrics.stormMembers({ kind: "superseded" });
    await sink.append(
      member.sessionId ?? "",
      buildStormMemberPayload("storm.member_superseded", storm, member, cluster, sha256Hex),
    );
  }

  /** Opens the storm's session once: a member that attaches while it opens waits for the same open. */
  private ensureOpen(storm: Storm): Promise<void> {
    const inFlight = this.opening.get(storm.id);
    if (inFlight) return inFlight;
    const opening = this.openStorm(storm).finally(() => this.opening.delete(storm.id));
    this.opening.set(storm.id, opening);
    return opening;
  }

  private bindMember(member: StormMember, signal: Signal, fp: string): void {
    const entry = this.dedup.get(member.key);
    if (entry) entry.incident = this.incidentOf(signal, fp);
  }

  private async openStorm(storm: Storm): Promise<void> {
    const { sink, logger, metrics, cluster, sha256Hex } = this.context;
    const fp = stormFingerprint(storm, sha256Hex);
    // The members the opening payload names; later ones attach (and are announced) themselves.
    const members = [...storm.members];
    for (const member of members) this.pendingMembers.delete(member.key);
    metrics.stormsFormed();
    const fitted = fitPayload(
      buildStormPayload(storm, cluster, sha256Hex, this.radius(storm)),
      this.context.injectMaxBytes,
    );
    const attributes = { "spar.watcher.fingerprint": fp, "spar.watcher.storm.members": storm.members.length };
    const result = await inWatcherSpan("watcher incident", attributes, () => sink.open(fitted.payload));
    if (result.id === undefined) {
      metrics.injectErrors({ reason: "storm", http_code: "session_create" });
      logger.error(`storm on ${ancestorDisplay(storm.ancestor)}: open failed: ${result.error}`);
    } else storm.sessionId = result.id;
    const namespaces = new Set(members.map((member) => member.namespace)).size;
    logger.info(
      `storm formed on ${ancestorDisplay(storm.ancestor)}: ${members.length} incidents across ${namespaces} namespace(s) → sid=${storm.sessionId ?? "(none)"}`,
    );
    const stormSession = storm.sessionId;
    for (const member of members) {
      const entry = this.dedup.get(member.key);
      if (entry) {
        entry.storm = fp;
        if (stormSession) entry.sessionId = stormSession;
      }
      if (stormSession) this.recovery.track(member.key, member.firstSeen, this.context.now());
      if (member.sessionId && stormSession && member.sessionId !== stormSession)
        await this.supersede(storm, member, stormSession);
      else metrics.stormMembers({ kind: "suppressed" });
    }
  }

  /** D431: the storm's radius bundle, when enrichment is on for its severity in per-incident mode. */
  private radius(storm: Storm): string | undefined {
    const { enrichCapBytes, enrichSeverities, mode } = this.context;
    if (enrichCapBytes === undefined || !enrichSeverities || mode === "shared") return undefined;
    return stormEnriched(storm, enrichSeverities) ? stormRadiusBundle(storm, enrichCapBytes) : undefined;
  }

  private async attach(storm: Storm, member: StormMember): Promise<void> {
    const { sink, metrics, cluster, now, sha256Hex } = this.context;
    const entry = this.dedup.get(member.key);
    if (entry) entry.storm = stormFingerprint(storm, sha256Hex);
    metrics.stormMembers({ kind: "attached" });
    const inFlight = this.opening.get(storm.id);
    if (inFlight) await inFlight;
    if (!storm.sessionId) {
      // The storm's open failed: this member tries it again (and is named in its payload).
      await this.ensureOpen(storm);
      return;
    }
    if (entry) entry.sessionId = storm.sessionId;
    this.recovery.track(member.key, member.firstSeen, now());
    await sink.append(storm.sessionId, buildStormMemberPayload("storm.member", storm, member, cluster, sha256Hex));
    if (this.correlator.updateDue(storm, now())) {
      metrics.stormUpdates();
      // Counted before the append, so a member in another lane meanwhile sends no second update.
      storm.lastReportedCount = storm.members.length;
      storm.lastReportAt = now();
      await sink.append(storm.sessionId, buildStormUpdatePayload(storm, cluster, sha256Hex));
    }
  }

  /** A member's outcome record went out: a storm whose every member cleared resolves itself. */
  async noteOutcome(outcome: RecoveryOutcome): Promise<void> {
    const storm = this.correlator.stormOf(outcome.key);
    if (!storm) return;
    if (outcome.kind === "resolved.reverted") {
      storm.resolved.delete(outcome.key);
      return;
    }
    storm.resolved.add(outcome.key);
    if (storm.resolved.size < storm.members.length || !storm.sessionId) return;
    const firstSeen = Math.min(...storm.members.map((member) => member.firstSeen));
    const payload = buildResolvedPayload(
      "resolved",
      {
        canonicalReason: "storm",
        namespace: storm.ancestor.namespace,
        kindOfObject: storm.ancestor.kind,
        name: storm.ancestor.name,
        uid: `storm:${storm.id}`,
        fingerprint: stormFingerprint(storm, this.context.sha256Hex),
        cluster: this.context.cluster,
        firstSeen,
      },
      { resolvedAt: outcome.resolvedAt, stableSince: outcome.stableSince, resolution: "recovered" },
    );
    payload.cleared_after = goDuration(Math.max(0, outcome.resolvedAt - firstSeen));
    this.correlator.close(storm.id);
    this.context.metrics.stormsResolved();
    await this.context.sink.append(storm.sessionId, payload);
  }
}
