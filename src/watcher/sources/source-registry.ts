/**
 * How each source of the contract (core/source-catalog.ts, D375) reads its settings from the
 * watcher's configuration (its thresholds; anything impure a detector needs, such as a
 * certificate parser). `cluster-events` predates the contract and is started by the runner itself.
 */
import { AUTOSCALING_DEFAULTS } from "../core/sources/autoscaling-detector.ts";
import { DEGRADATION_DEFAULTS, type DegradationSettings } from "../core/sources/degradation-detector.ts";
import { ROLLOUT_DEFAULTS, type RolloutSettings } from "../core/sources/rollout-detector.ts";
import { WORKLOAD_DEFAULTS, type WorkloadSettings } from "../core/sources/workload-detector.ts";
import { OBJECT_STATE_DEFAULTS } from "../core/sources/object-state.ts";
import type { WatcherConfig } from "../watcher-config.ts";
import { cronActivations } from "./cron-schedule.ts";

/** A flag's effective value as a number (durations are ms), else the default. */
function flagNumber(config: WatcherConfig, flag: string, fallback: number): number {
  const value = config.values.get(flag);
  return typeof value === "number" ? value : fallback;
}

/** Settings readers by source name; a source with none gets `{}`. */
export const SOURCE_SETTINGS: Readonly<Record<string, (config: WatcherConfig) => unknown>> = {
  rollout: (config): RolloutSettings => ({
    ...ROLLOUT_DEFAULTS,
    observeMs: flagNumber(config, "rollout-observe", ROLLOUT_DEFAULTS.observeMs),
  }),
  // The cron library comes in here so the detector stays pure (D381).
  workload: (): WorkloadSettings => ({ ...WORKLOAD_DEFAULTS, activations: cronActivations }),
  autoscaling: () => ({ ...AUTOSCALING_DEFAULTS }),
  degradation: (config): DegradationSettings => ({
    ...DEGRADATION_DEFAULTS,
    windowMs: flagNumber(config, "degradation-window", DEGRADATION_DEFAULTS.windowMs),
    drop: flagNumber(config, "degradation-drop", DEGRADATION_DEFAULTS.drop),
  }),
  // object-state has no flags: its thresholds are fixed (docs/watcher.md#object-state, D376).
  "object-state": () => OBJECT_STATE_DEFAULTS,
};

export function sourceSettings(name: string, config: WatcherConfig): unknown {
  return SOURCE_SETTINGS[name]?.(config) ?? {};
}
