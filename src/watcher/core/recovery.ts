/**
 * Recovery tracking (docs/watcher-pipeline.md#recovery): a bound incident is symptomatic until a
 * clearance observation says it cleared; once clear for --recovery-stable-for it is resolved
 * (`resolved`); a recurrence within the same window after that is `resolved.reverted` and the
 * incident is symptomatic again; a quiet revert window ends tracking. Incidents no observer ever
 * judges are dropped after an hour. Pure; the caller supplies observations and the clock.
 */

export interface ClearanceObservation {
  cleared: boolean;
  /** When the object became clear (epoch ms); clamped into [firstSeen, now]. */
  stableSince?: number;
  resolution?: "recovered" | "object_deleted";
}

export interface RecoveryOutcome {
  kind: "resolved" | "resolved.reverted";
  key: string;
  resolvedAt: number;
  stableSince: number;
  resolution: "recovered" | "object_deleted";
  revertedAt?: number;
}

type State =
  | { phase: "symptomatic" }
  | { phase: "clearing"; stableSince: number; resolution: "recovered" | "object_deleted" }
  | { phase: "resolved"; stableSince: number; resolvedAt: number; resolution: "recovered" | "object_deleted" };

interface Tracked {
  firstSeen: number;
  trackedAt: number;
  judged: boolean;
  state: State;
}

const UNCLAIMED_DROP_MS = 60 * 60_000;

export class RecoveryTracker {
  private readonly tracked = new Map<string, Tracked>();

  constructor(private readonly stableForMs: number) {}

  get enabled(): boolean {
    return this.stableForMs > 0;
  }

  get size(): number {
    return this.tracked.size;
  }

  track(key: string, firstSeen: number, now: number): void {
    if (!this.enabled) return;
    const existing = this.tracked.get(key);
    if (existing) {
      existing.state = { phase: "symptomatic" };
      return;
    }
    this.tracked.set(key, { firstSeen, trackedAt: now, judged: false, state: { phase: "symptomatic" } });
  }

  keys(): string[] {
    return [...this.tracked.keys()];
  }

  /** One observation of one incident; returns the outcome it completes, if any. */
  observe(key: string, observation: ClearanceObservation | undefined, now: number): RecoveryOutcome | undefined {
    const entry = this.tracked.get(key);
    if (!entry) return undefined;
    if (observation === undefined) {
      if (!entry.judged && now - entry.trackedAt > UNCLAIMED_DROP_MS) this.tracked.delete(key);
      return undefined;
    }
    entry.judged = true;
    const state = entry.state;
    if (state.phase === "resolved") {
      if (now - state.resolvedAt > this.stableForMs) {
        this.tracked.delete(key);
        return undefined;
      }
      if (!observation.cleared) {
        entry.state = { phase: "symptomatic" };
        return {
          kind: "resolved.reverted",
          key,
          resolvedAt: state.resolvedAt,
          stableSince: state.stableSince,
          resolution: state.resolution,
          revertedAt: now,
        };
      }
      return undefined;
    }
    if (!observation.cleared) {
      entry.state = { phase: "symptomatic" };
      return undefined;
    }
    const since = Math.min(now, Math.max(entry.firstSeen, observation.stableSince ?? now));
    const resolution = observation.resolution ?? "recovered";
    // A later stableSince (a restart inside the window) starts the window again; an observation
    // that knows no transition time keeps the window already running.
    const keep = state.phase === "clearing" && (observation.stableSince === undefined || since <= state.stableSince);
    const stableSince = keep ? state.stableSince : since;
    if (now - stableSince >= this.stableForMs) {
      entry.state = { phase: "resolved", stableSince, resolvedAt: now, resolution };
      return { kind: "resolved", key, resolvedAt: now, stableSince, resolution };
    }
    entry.state = { phase: "clearing", stableSince, resolution };
    return undefined;
  }

  /** A recurrence reported by the pipeline (a new event for a tracked key). */
  recur(key: string, now: number): RecoveryOutcome | undefined {
    return this.observe(key, { cleared: false }, now);
  }

  forget(key: string): void {
    this.tracked.delete(key);
  }
}
