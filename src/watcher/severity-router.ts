/**
 * The dispatcher's severity-routing side (docs/watcher.md#severity-routing, D418-D422), kept out
 * of dispatcher.ts: whether a new incident goes to the watchboard (a per-incident warning) and
 * whether a duplicate belongs to it; the memory of resolved incidents and the `triage.regressed`
 * payload a recurrence opens with; the cross-source `family.member` join. Shared mode routes
 * nothing: the dispatcher builds this with no watchboard and no regressions there.
 */
import { sha256Hex } from "../surfaces/http/caller-auth.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { DedupCache, DedupEntry } from "./core/dedup-cache.ts";
import {
  AncestorIndex,
  buildFamilyMemberPayload,
  buildReattachedPayload,
  joinFamily,
  sourceFamily,
} from "./core/family.ts";
import { fingerprint } from "./core/fingerprint.ts";
import type { IncidentPayload } from "./core/payload.ts";
import type { RecoveryOutcome } from "./core/recovery.ts";
import { type RegressedPayload, RegressionMemory, type Resolution, buildRegressedPayload } from "./core/regression.ts";
import type { Signal } from "./core/signal.ts";
import type { IncidentSink } from "./core/sink.ts";
import { type Ancestor, ancestorKey } from "./core/storm.ts";
import { entryOf } from "./core/watchboard.ts";
import { type RoutingMetrics, routingMetrics } from "./routing-metrics.ts";
import type { Watchboard } from "./watchboard.ts";
import type { WatcherMetrics } from "./watcher-metrics.ts";

export interface SeverityRouterSettings {
  cluster: string;
  zone: string;
  mode: "per-incident" | "shared";
  /** `--triage-regress-factor` when on (with `--store`); absent or 0: no regressions. */
  regressFactor?: number;
}

export interface SeverityRouterDeps {
  sink: IncidentSink;
  logger: Logger;
  metrics: WatcherMetrics;
  watchboard?: Watchboard;
  /** Blast-radius keys of a signal's object (the topology graph, when storms run). */
  topology?: (signal: Signal) => Ancestor[];
}

export class SeverityRouter {
  private readonly regressions: RegressionMemory | undefined;
  private readonly board: Watchboard | undefined;
  private readonly counts: RoutingMetrics;
  private readonly ancestors = new AncestorIndex();

  constructor(
    private readonly settings: SeverityRouterSettings,
    private readonly deps: SeverityRouterDeps,
    private readonly dedup: DedupCache,
  ) {
    const routing = settings.mode === "per-incident";
    this.counts = routingMetrics(deps.metrics, settings.cluster);
    this.board = routing ? deps.watchboard : undefined;
    this.regressions = routing && settings.regressFactor ? new RegressionMemory(settings.regressFactor) : undefined;
  }

  /**
   * A new warning leaves the pipeline here (D418): joined to the open critical incident it shares
   * a blast-radius ancestor with (`reattached`, D422), else onto the watchboard; undefined for
   * anything else.
   */
  async toBoard(
    signal: Signal,
    key: string,
    fp: string,
    now: number,
  ): Promise<"watchboard" | "reattached" | undefined> {
    if (!this.board || signal.severity !== "warning") return undefined;
    if (await this.reattach(signal, key, fp)) return "reattached";
    await this.board.add(entryOf(signal, key, fp, now));
    return "watchboard";
  }

  /** A critical incident opened its session: warnings under its ancestors join it from now on. */
  noteOpened(signal: Signal, key: string, sessionId: string): void {
    if (!this.board || !this.deps.topology || signal.severity !== "critical") return;
    this.ancestors.note({ key, sessionId }, this.deps.topology(signal).map(ancestorKey));
  }

  private async reattach(signal: Signal, key: string, fp: string): Promise<boolean> {
    const topology = this.deps.topology;
    if (!topology) return false;
    const live = (incident: { key: string; sessionId: string }) => {
      const entry = this.dedup.get(incident.key);
      return entry?.sessionId === incident.sessionId && !entry.storm;
    };
    const match = this.ancestors.match(topology(signal).map(ancestorKey), sourceFamily(signal.kind), live);
    if (!match) return false;
    const { sessionId } = match.incident;
    const count = this.dedup.get(key)?.count ?? 1;
    const payload = buildReattachedPayload(signal, count, match.ancestor, fp, this.settings.cluster, sessionId);
    const appended = await this.deps.sink.append(sessionId, payload);
    if (!appended.ok && !appended.queued) {
      this.deps.metrics.injectErrors({ reason: "watchboard", http_code: "inject" });
      this.deps.logger.error(`family.member ${signal.kind} into ${sessionId} failed: ${appended.error}`);
      return false;
    }
    this.dedup.bind(key, sessionId);
    this.counts.watchboardReattached({ kind: signal.kind });
    this.deps.logger.info(
      `family.member ${signal.kind} ${signal.kindOfObject}=${signal.namespace}/${signal.name} → sid=${sessionId} (shares ${match.ancestor})`,
    );
    return true;
  }

  /** Whether the key's warning waits on the watchboard or was delivered in a digest. */
  onBoard(key: string, sessionId: string | undefined): boolean {
    return this.board !== undefined && (this.board.holds(key) || this.board.isBoardSession(sessionId));
  }

  /** A duplicate of a boarded warning: counted into its waiting entry, if it still waits. */
  noteBoarded(key: string, lastSeen: number): void {
    this.board?.note(key, lastSeen);
  }

  /** A boarded warning turned critical: it leaves the board, its incident opens instead. */
  release(key: string, entry: DedupEntry): void {
    this.board?.release(key);
    delete entry.sessionId;
  }

  /** The resolution a new incident for `key` regresses, if it came back soon enough (D421). */
  takeRegression(key: string, now: number): Resolution | undefined {
    const resolution = this.regressions?.take(key, now);
    if (resolution) this.counts.triageRegressed();
    return resolution;
  }

  /** The opening payload: `triage.regressed` for a regression, else the incident's own. */
  opening(payload: IncidentPayload, regressed: Resolution | undefined): IncidentPayload | RegressedPayload {
    return regressed ? buildRegressedPayload(payload, regressed, this.settings.regressFactor ?? 0) : payload;
  }

  /** A resolved incident may regress; a reverted one is the same incident again. */
  noteOutcome(outcome: RecoveryOutcome, sessionId: string, entry: DedupEntry): void {
    if (!this.regressions || !entry.incident) return;
    if (outcome.kind !== "resolved") return this.regressions.forget(outcome.key);
    this.regressions.sweep(outcome.resolvedAt);
    this.regressions.remember(outcome.key, {
      sessionId,
      incident: entry.incident,
      firstSeen: entry.incident.first_event ?? entry.firstSeen,
      resolvedAt: outcome.resolvedAt,
      count: entry.count,
    });
  }

  /** A first duplicate from another source family: one `family.member` into the incident's session (D422). */
  async joinMember(signal: Signal, canonical: string, entry: DedupEntry): Promise<boolean> {
    const sessionId = entry.sessionId;
    if (!sessionId || entry.storm || !entry.sourceKind || !joinFamily(entry, signal)) return false;
    const { metrics, logger, sink } = this.deps;
    const { cluster, zone } = this.settings;
    const fp = fingerprint(sha256Hex, signal.kind, canonical, signal.kindOfObject, zone);
    const payload = buildFamilyMemberPayload(signal, canonical, entry.sourceKind, fp, cluster, sessionId);
    const appended = await sink.append(sessionId, payload);
    if (!appended.ok && !appended.queued) {
      metrics.injectErrors({ reason: signal.reason, http_code: "inject" });
      logger.error(`family.member ${signal.kind} into ${sessionId} failed: ${appended.error}`);
      return false;
    }
    this.counts.crossSourceFollowups({ source: sourceFamily(signal.kind) });
    logger.info(
      `family.member ${signal.kind} ${signal.kindOfObject}=${signal.namespace}/${signal.name} → sid=${sessionId}`,
    );
    return true;
  }
}
