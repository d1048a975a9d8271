/**
 * `triage.regressed` (docs/watcher-pipeline.md#regressions, D421): the memory of incidents that
 * resolved, and the payload a recurrence opens when it comes back within `--triage-regress-factor`
 * times the resolved incident's duration. Spar has no triage-status records, so the incident's
 * own `resolved` outcome stands in for a downgrade record. Pure.
 */
import type { DedupIncident } from "./dedup-cache.ts";
import { rfc3339 } from "./go-time.ts";
import type { IncidentPayload } from "./payload.ts";

/** Resolved incidents remembered at most (the oldest resolution forgotten first). */
export const REGRESSION_CAPACITY = 10_000;

export interface Resolution {
  sessionId: string;
  incident: DedupIncident;
  /** Epoch ms of the incident's first event and of its `resolved`. */
  firstSeen: number;
  resolvedAt: number;
  /** The dedup-window count the incident had reached. */
  count: number;
}

export interface RegressedPayload extends Omit<IncidentPayload, "kind" | "type"> {
  kind: "triage.regressed";
  signal_kind: string;
  triage_status: "resolved";
  triage_session: string;
  baseline_count: number;
  factor: number;
  resolved_at: string;
}

export class RegressionMemory {
  private readonly resolved = new Map<string, Resolution>();

  constructor(
    private readonly factor: number,
    private readonly capacity = REGRESSION_CAPACITY,
  ) {}

  get size(): number {
    return this.resolved.size;
  }

  /** An incident resolved: remember it for factor × its duration. */
  remember(key: string, resolution: Resolution): void {
    this.resolved.delete(key);
    this.resolved.set(key, resolution);
    while (this.resolved.size > this.capacity) {
      const oldest = this.resolved.keys().next().value as string;
      this.resolved.delete(oldest);
    }
  }

  /** It came back inside its own revert window (`resolved.reverted`): the same incident, no regression. */
  forget(key: string): void {
    this.resolved.delete(key);
  }

  /**
   * A new incident for `key`: the resolution it regresses, once (taken out), when it recurs within
   * factor × the resolved incident's duration after the resolve; stale resolutions are dropped.
   */
  take(key: string, now: number): Resolution | undefined {
    const resolution = this.resolved.get(key);
    if (!resolution) return undefined;
    this.resolved.delete(key);
    const duration = Math.max(0, resolution.resolvedAt - resolution.firstSeen);
    return now - resolution.resolvedAt <= this.factor * duration ? resolution : undefined;
  }

  /** Drops resolutions whose regression window has passed. */
  sweep(now: number): void {
    for (const [key, resolution] of this.resolved) {
      const duration = Math.max(0, resolution.resolvedAt - resolution.firstSeen);
      if (now - resolution.resolvedAt > this.factor * duration) this.resolved.delete(key);
    }
  }
}

/** The opening payload of a regression: the recurrence's own payload, re-kinded, naming what resolved. */
export function buildRegressedPayload(
  recurrence: IncidentPayload,
  resolution: Resolution,
  factor: number,
): RegressedPayload {
  const { kind, type: _type, message, ...rest } = recurrence;
  const took = Math.round((resolution.resolvedAt - resolution.firstSeen) / 1000);
  return {
    kind: "triage.regressed",
    ...rest,
    signal_kind: kind,
    triage_status: "resolved",
    triage_session: resolution.sessionId,
    baseline_count: resolution.count,
    factor,
    resolved_at: rfc3339(resolution.resolvedAt),
    fingerprint: resolution.incident.fingerprint,
    message: `resolved incident regressed: it recurred within ${factor}x the ${took}s it lasted before it resolved in session ${resolution.sessionId}; the fix did not hold: ${message}`,
  };
}
