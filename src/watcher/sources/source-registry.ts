/**
 * How each source of the contract (core/source-catalog.ts, D375) reads its settings from the
 * watcher's configuration (its thresholds; anything impure a detector needs, such as a
 * certificate parser). `cluster-events` predates the contract and is started by the runner itself.
 */
import { OBJECT_STATE_DEFAULTS } from "../core/sources/object-state.ts";
import type { WatcherConfig } from "../watcher-config.ts";

/** Settings readers by source name; a source with none gets `{}`. */
export const SOURCE_SETTINGS: Readonly<Record<string, (config: WatcherConfig) => unknown>> = {
  // object-state has no flags: its thresholds are fixed (docs/watcher.md#object-state, D376).
  "object-state": () => OBJECT_STATE_DEFAULTS,
};

export function sourceSettings(name: string, config: WatcherConfig): unknown {
  return SOURCE_SETTINGS[name]?.(config) ?? {};
}
