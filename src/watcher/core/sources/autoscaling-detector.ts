/**
 * The `autoscaling` source (docs/watcher.md#autoscaling): HorizontalPodAutoscaler
 * (autoscaling/v2) status conditions, judged every 30s. `autoscaling.hpa_pinned`: at maxReplicas
 * with ScalingLimited=True/TooManyReplicas for 10m is a warning, and once more, critical, at 30m.
 * `autoscaling.hpa_metrics_dead`: ScalingActive=False with a `FailedGet*` reason for 15m is a
 * warning. Each duration counts from the condition's lastTransitionTime (the controller's own
 * clock for the state; the time it was first seen when absent, never later than now), so an HPA
 * pinned for an hour before the watcher started is judged at once; a condition that ends is
 * forgotten, so it pages again when it returns (D382). State is kept only for HPAs in one of the
 * two states. Pure.
 */
import { goDuration } from "../go-time.ts";
import type { OpenCondition } from "../open-conditions.ts";
import type { Signal } from "../signal.ts";
import type { Detector, KubeObject, ObjectChange, SourceSpec } from "../source-spec.ts";
import { condition, count, field, listWatch, type Meta, meta, sourceSignal } from "./source-fields.ts";

export interface AutoscalingSettings {
  pinnedWarnMs: number;
  pinnedCriticalMs: number;
  metricsDeadMs: number;
}

export const AUTOSCALING_DEFAULTS: AutoscalingSettings = {
  pinnedWarnMs: 10 * 60_000,
  pinnedCriticalMs: 30 * 60_000,
  metricsDeadMs: 15 * 60_000,
};

interface Episode {
  since: number;
  /** The condition's lastTransitionTime as read (a new one is a new episode). */
  transition: number | undefined;
  /** 0 nothing sent, 1 warning sent, 2 critical sent. */
  level: 0 | 1 | 2;
  detail: string;
}

interface HpaState {
  meta: Meta;
  pinned?: Episode;
  dead?: Episode;
}

/** A new or continuing episode: the same transition (or none named) keeps its start and what was sent. */
function episode(before: Episode | undefined, since: number | undefined, now: number, detail: string): Episode {
  if (before && before.transition === since) return { ...before, detail };
  return { since: Math.min(since ?? now, now), transition: since, level: 0, detail };
}

export class AutoscalingDetector implements Detector {
  readonly #settings: AutoscalingSettings;
  readonly #hpas = new Map<string, HpaState>();

  constructor(settings: AutoscalingSettings) {
    this.#settings = settings;
  }

  get size(): number {
    return this.#hpas.size;
  }

  observe(_watch: string, change: ObjectChange, object: KubeObject, now: number, _initial: boolean): Signal[] {
    const hpa = meta(object);
    const before = this.#hpas.get(hpa.uid);
    if (change === "delete") {
      this.#hpas.delete(hpa.uid);
      return [];
    }
    const state: HpaState = { meta: hpa };
    const limited = condition(object, "ScalingLimited");
    const current = count(field(object, "status", "currentReplicas"));
    const max = count(field(object, "spec", "maxReplicas"));
    if (max > 0 && current >= max && limited?.status === "True" && limited.reason === "TooManyReplicas")
      state.pinned = episode(
        before?.pinned,
        limited.since,
        now,
        `${current}/${max} replicas: ${limited.message || limited.reason}`,
      );
    const active = condition(object, "ScalingActive");
    if (active?.status === "False" && active.reason.startsWith("FailedGet"))
      state.dead = episode(
        before?.dead,
        active.since,
        now,
        `${active.reason}${active.message ? `: ${active.message}` : ""}`,
      );
    if (state.pinned || state.dead) this.#hpas.set(hpa.uid, state);
    else this.#hpas.delete(hpa.uid);
    return [];
  }

  /** Episodes that paged and still hold: gone when the condition ends or the HPA is deleted (D437). */
  *open(): Iterable<OpenCondition> {
    for (const [uid, state] of this.#hpas) {
      if (state.pinned && state.pinned.level > 0) yield { uid, reason: "hpa_pinned" };
      if (state.dead && state.dead.level > 0) yield { uid, reason: "hpa_metrics_dead" };
    }
  }

  tick(now: number): Signal[] {
    const signals: Signal[] = [];
    const { pinnedWarnMs, pinnedCriticalMs, metricsDeadMs } = this.#settings;
    for (const state of this.#hpas.values()) {
      const { pinned, dead } = state;
      if (pinned) {
        const age = now - pinned.since;
        const level = age >= pinnedCriticalMs ? 2 : age >= pinnedWarnMs ? 1 : 0;
        if (level > pinned.level) {
          pinned.level = level;
          signals.push(
            this.#signal(
              state.meta,
              "hpa_pinned",
              level === 2 ? "critical" : "warning",
              now,
              `pinned at maxReplicas for ${goDuration(age)} (${pinned.detail})`,
            ),
          );
        }
      }
      if (dead && dead.level === 0 && now - dead.since >= metricsDeadMs) {
        dead.level = 1;
        signals.push(
          this.#signal(
            state.meta,
            "hpa_metrics_dead",
            "warning",
            now,
            `cannot read its metrics for ${goDuration(now - dead.since)} (${dead.detail})`,
          ),
        );
      }
    }
    return signals;
  }

  #signal(object: Meta, reason: string, severity: "warning" | "critical", now: number, what: string): Signal {
    return sourceSignal({
      kind: `autoscaling.${reason}`,
      reason,
      object,
      kindOfObject: "HorizontalPodAutoscaler",
      severity,
      now,
      message: `HorizontalPodAutoscaler ${object.namespace}/${object.name} ${what}`,
    });
  }
}

export const AUTOSCALING_SPEC: SourceSpec<AutoscalingSettings> = {
  name: "autoscaling",
  reasons: ["hpa_pinned", "hpa_metrics_dead"],
  scope: "cluster",
  required: listWatch("autoscaling", "horizontalpodautoscalers"),
  watches: [{ name: "horizontalpodautoscalers", path: "/apis/autoscaling/v2/horizontalpodautoscalers" }],
  tickMs: 30_000,
  detector: (settings) => new AutoscalingDetector(settings),
};
