/**
 * How each source of the contract (core/source-catalog.ts, D375) reads its settings from the
 * watcher's configuration (its thresholds; anything impure a detector needs, such as a
 * certificate parser).
 * A reader is also told which of the source's polls and watches the startup plan left out. A reader
 * reads the flag values alone (a source's worker builds its settings from them). Sources whose
 * inputs are not the Kubernetes API register a runner factory in SOURCE_RUNNERS instead.
 */
import { AUTOSCALING_DEFAULTS } from "../core/sources/autoscaling-detector.ts";
import { CAPACITY_DEFAULTS, type CapacitySettings } from "../core/sources/capacity-source.ts";
import { DEGRADATION_DEFAULTS, type DegradationSettings } from "../core/sources/degradation-detector.ts";
import { ROLLOUT_DEFAULTS, type RolloutSettings } from "../core/sources/rollout-detector.ts";
import { WORKLOAD_DEFAULTS, type WorkloadSettings } from "../core/sources/workload-detector.ts";
import { OBJECT_STATE_DEFAULTS } from "../core/sources/object-state.ts";
import { TOKEN_BURN_DEFAULTS, type TokenBurnSettings } from "../core/sources/token-burn-detector.ts";
import { SATURATION_DEFAULTS, type SaturationSettings } from "../core/sources/saturation-detector.ts";
import { cronActivations } from "./cron-schedule.ts";
import type { FlagValue } from "../../config/flag-spec.ts";
import type { ExpirySettings } from "../core/sources/expiry-detector.ts";
import type { GatewaySettings } from "../core/sources/gateway-source.ts";
import type { WatcherConfig } from "../watcher-config.ts";
import { parseCertificates } from "./x509.ts";
import type { SourceRunnerContext, SourceRunnerFactory } from "./source-runner.ts";
import { ClusterEventsSource } from "./cluster-events.ts";
import { tokenBurnRunner } from "./token-burn-source.ts";
import { notificationsRunner, receiverSettings } from "./notifications-receiver.ts";
import { quotaRunner } from "./quota-source.ts";
import { SaturationRunner } from "./saturation-runner.ts";
import { computeClassSettings, topologySettings } from "./leeway-settings.ts";

/** What a settings reader may read: the flag values alone, so a source's worker can build them too. */
export type SourceValues = Pick<WatcherConfig, "values">;

export interface SettingsContext {
  /** Names of the source's polls and watches left out at startup (an API not served, an optional grant denied). */
  without: ReadonlySet<string>;
}

/** A flag's effective value as a number (durations are ms), else the default. */
function duration(values: ReadonlyMap<string, FlagValue>, name: string, fallback: number): number {
  const value = values.get(name);
  return typeof value === "number" ? value : fallback;
}

function list(values: ReadonlyMap<string, FlagValue>, name: string): string[] {
  const value = values.get(name);
  if (typeof value !== "string" || value === "all") return [];
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

function expirySettings(config: SourceValues, context: SettingsContext): ExpirySettings {
  return {
    warnMs: duration(config.values, "expiry-warn", 336 * 3600_000),
    intervalMs: duration(config.values, "expiry-interval", 3600_000),
    namespaces: list(config.values, "expiry-namespaces"),
    parse: parseCertificates,
    // D385: Certificates scanned (their CRD was discovered) → their TLS Secrets are judged through them.
    certManager: ![...context.without].some((name) => name.startsWith("certificates")),
  };
}

/** token-burn's thresholds (D403); its runner reads its endpoint, poll and credentials itself. */
function tokenBurnSettings(config: { values: ReadonlyMap<string, FlagValue> }): TokenBurnSettings {
  return {
    ...TOKEN_BURN_DEFAULTS,
    multiple: duration(config.values, "burn-multiple", TOKEN_BURN_DEFAULTS.multiple),
    budgetUsd: duration(config.values, "token-budget-usd", TOKEN_BURN_DEFAULTS.budgetUsd),
    etaMs: duration(config.values, "burn-eta", TOKEN_BURN_DEFAULTS.etaMs),
  };
}

function saturationSettings(config: { values: ReadonlyMap<string, FlagValue> }): SaturationSettings {
  return {
    ...SATURATION_DEFAULTS,
    intervalMs: duration(config.values, "saturation-interval", SATURATION_DEFAULTS.intervalMs),
    warnMs: duration(config.values, "saturation-warn", SATURATION_DEFAULTS.warnMs),
    windowMs: duration(config.values, "saturation-window", SATURATION_DEFAULTS.windowMs),
  };
}

function capacitySettings(config: SourceValues): CapacitySettings {
  const pendingWarnMs = duration(config.values, "pending-age", CAPACITY_DEFAULTS.pendingWarnMs);
  return {
    ...CAPACITY_DEFAULTS,
    pollMs: duration(config.values, "capacity-poll", CAPACITY_DEFAULTS.pollMs),
    pendingWarnMs,
    // Critical at 15m, or at --pending-age when that is longer.
    pendingCriticalMs: Math.max(CAPACITY_DEFAULTS.pendingCriticalMs, pendingWarnMs),
    // The status's newer shape is YAML: Bun's reader comes in here so the detector stays pure (D395).
    parseYaml: (text) => Bun.YAML.parse(text),
  };
}

/** Settings readers by source name; a source with none gets `{}`. */
export const SOURCE_SETTINGS: Readonly<Record<string, (config: SourceValues, context: SettingsContext) => unknown>> = {
  expiry: expirySettings,
  capacity: capacitySettings,
  gateway: (config): GatewaySettings => ({ graceMs: duration(config.values, "gateway-grace", 5 * 60_000) }),
  rollout: (config): RolloutSettings => ({
    ...ROLLOUT_DEFAULTS,
    observeMs: duration(config.values, "rollout-observe", ROLLOUT_DEFAULTS.observeMs),
  }),
  // The cron library comes in here so the detector stays pure (D381).
  workload: (): WorkloadSettings => ({ ...WORKLOAD_DEFAULTS, activations: cronActivations }),
  autoscaling: () => ({ ...AUTOSCALING_DEFAULTS }),
  degradation: (config): DegradationSettings => ({
    ...DEGRADATION_DEFAULTS,
    windowMs: duration(config.values, "degradation-window", DEGRADATION_DEFAULTS.windowMs),
    drop: duration(config.values, "degradation-drop", DEGRADATION_DEFAULTS.drop),
  }),
  // object-state has no flags: its thresholds are fixed (docs/watcher.md#object-state, D376).
  "object-state": () => OBJECT_STATE_DEFAULTS,
  "token-burn": tokenBurnSettings,
  saturation: saturationSettings,
  // spar's own sources (D21, D406): their readers live in leeway-settings.ts.
  "topology-drift": (config) => topologySettings(config.values),
  "compute-class": (config) => computeClassSettings(config.values),
};

export function sourceSettings(
  name: string,
  config: SourceValues,
  context: SettingsContext = { without: new Set() },
): unknown {
  return SOURCE_SETTINGS[name]?.(config, context) ?? {};
}

/**
 * Sources that are not a DetectorSource over the Kubernetes API (an HTTP receiver, a poller of
 * the agent daemon): each builds its own runner from the context. A name here needs no
 * watches of its SourceSpec, but the catalog still holds it (for scope and grants).
 */
export const SOURCE_RUNNERS: Readonly<Record<string, SourceRunnerFactory>> = {
  // Predates the contract (D375): its deny-list narrows the watch with a field selector.
  "cluster-events": (context) =>
    new ClusterEventsSource(
      context.connection,
      list(context.values, "exclude-namespace"),
      context.emit,
      context.logger,
      context.onRestart,
    ),
  "token-burn": tokenBurnRunner((values) => tokenBurnSettings({ values })),
  // D398: a QuotaProvider polled every --quota-poll (the portable one lists ResourceQuotas).
  quota: quotaRunner,
  // D402: a CloudEvents receiver on its own listener.
  notifications: notificationsRunner,
  // Its node stats are one GET per node, which a fixed-path poll cannot say (D391).
  saturation: (context) => new SaturationRunner(context, saturationSettings(context)),
};

/**
 * What a source's flags and environment must hold, checked on the main thread before its worker
 * starts, so a missing one refuses startup (a SourceRefusal) instead of failing in the worker.
 */
export const SOURCE_PREFLIGHTS: Readonly<Record<string, (context: SourceRunnerContext) => void>> = {
  notifications: (context) => void receiverSettings(context),
};
