/**
 * The dispatcher settings the watcher's unit tests start from: cluster `prod`, per-incident mode,
 * the default reasons, crash loops on their first back-off, a 5-minute dedup window and recovery
 * window, critical enriched, 8 KiB payloads. A test spreads its own changes over it.
 */
import { DEFAULT_REASONS } from "../../src/watcher/core/reasons.ts";
import type { DispatcherSettings } from "../../src/watcher/dispatcher.ts";

export const DISPATCHER_SETTINGS: DispatcherSettings = {
  cluster: "prod",
  zone: "",
  mode: "per-incident",
  filter: {
    reasons: new Set(DEFAULT_REASONS),
    allowNamespaces: new Set(),
    excludeNamespaces: new Set(),
    backoffMinCount: 1,
    imagePullTransientMinCount: 3,
    unhealthyMinCount: 3,
  },
  dedupWindowMs: 300_000,
  recoveryStableForMs: 300_000,
  enrichSeverities: new Set(["critical"]),
  injectMaxBytes: 8192,
  severityOverrides: new Map(),
};
