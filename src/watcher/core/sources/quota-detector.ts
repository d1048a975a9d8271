/**
 * The `quota` source (docs/watcher.md#quota, D398-D399): told every poll's quota usages (from a
 * QuotaProvider: the portable one reads ResourceQuotas), it keeps each quota's usage history over
 * `--quota-window` (168h) and judges `quota.forecast`: a warning when usage is at least 90% or a
 * least-squares fit of the history says the limit is reached within 7d, critical at 98% or
 * within 48h. The fit is made for the 10 quotas with the highest usage ratio plus every one at
 * or above `--quota-warn` (0.8), from at least 4 samples. Level-triggered: the first poll
 * reports a quota already at 90%. A quota pages once, once more when it turns critical, and is
 * forgotten (and may page again) when usage is back under 90% and the ETA is beyond twice 7d or
 * gone; a quota that disappears is forgotten. Pure.
 */
import { goDuration } from "../go-time.ts";
import type { Severity, Signal } from "../signal.ts";
import type { Detector, SourceSpec } from "../source-spec.ts";
import type { QuotaUsage } from "./quota-usage.ts";
import { forecastBasis } from "./source-fields.ts";

export const QUOTA_KIND = "quota.forecast";
const DAY = 24 * 3600_000;

export interface QuotaSettings {
  /** `--quota-poll`. */
  pollMs: number;
  /** `--quota-window`: the history the fit reads. */
  windowMs: number;
  /** `--quota-warn`: every quota at or above this ratio is fitted. */
  warnRatio: number;
  /** How many quotas with the highest ratio are fitted besides. */
  top: number;
  minSamples: number;
  /** Samples kept per quota at most (older ones thinned to every other). */
  maxSamples: number;
  warnUsage: number;
  criticalUsage: number;
  warnEtaMs: number;
  criticalEtaMs: number;
}

export const QUOTA_DEFAULTS: QuotaSettings = {
  pollMs: 15 * 60_000,
  windowMs: 7 * DAY,
  warnRatio: 0.8,
  top: 10,
  minSamples: 4,
  maxSamples: 512,
  warnUsage: 0.9,
  criticalUsage: 0.98,
  warnEtaMs: 7 * DAY,
  criticalEtaMs: 2 * DAY,
};

interface Sample {
  at: number;
  used: number;
}

interface Series {
  usage: QuotaUsage;
  samples: Sample[];
  /** 0 nothing sent, 1 warning sent, 2 critical sent. */
  level: 0 | 1 | 2;
}

/** What a quota's history says now. */
interface Forecast {
  ratio: number;
  /** Growth per ms from the fit; undefined when not fitted. */
  slope?: number;
  /** Time until the limit at that slope (0 when already reached); undefined when not growing. */
  etaMs?: number;
}

/** The least-squares slope of used over time (per ms); undefined when the samples span no time. */
export function leastSquaresSlope(samples: readonly Sample[]): number | undefined {
  const n = samples.length;
  if (n < 2) return undefined;
  const meanX = samples.reduce((sum, sample) => sum + sample.at, 0) / n;
  const meanY = samples.reduce((sum, sample) => sum + sample.used, 0) / n;
  let numerator = 0;
  let denominator = 0;
  for (const sample of samples) {
    numerator += (sample.at - meanX) * (sample.used - meanY);
    denominator += (sample.at - meanX) ** 2;
  }
  return denominator === 0 ? undefined : numerator / denominator;
}

const BINARY_UNITS = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
const DECIMAL_UNITS = ["k", "M", "G", "T", "P", "E"];

/** A quantity for a message, in the units its limit is written in (`2Gi`, `1.5k`, `0.25`). */
export function amount(value: number, like: string): string {
  const binary = /[KMGTPE]i$/.test(like);
  const [step, units] = binary ? [1024, BINARY_UNITS] : [1000, DECIMAL_UNITS];
  let scaled = value;
  let unit = "";
  for (const next of units) {
    if (Math.abs(scaled) < step) break;
    scaled /= step;
    unit = next;
  }
  return `${Number(scaled.toPrecision(3))}${unit}`;
}

function eta(ms: number): string {
  return ms >= DAY ? `~${(ms / DAY).toFixed(1)}d` : `~${goDuration(Math.round(ms / 60_000) * 60_000)}`;
}

export class QuotaDetector implements Detector {
  readonly #settings: QuotaSettings;
  readonly #series = new Map<string, Series>();

  constructor(settings: QuotaSettings) {
    this.#settings = settings;
  }

  /** Quotas with history (bounded by the provider's quotas). */
  get size(): number {
    return this.#series.size;
  }

  /** No watches: usages come through `judge`. */
  observe(): Signal[] {
    return [];
  }

  /** One poll's usages: record them, then judge every quota. */
  judge(usages: readonly QuotaUsage[], now: number): Signal[] {
    const seen = new Set<string>();
    for (const usage of usages) {
      if (usage.hard <= 0) continue;
      seen.add(usage.uid);
      this.#record(usage, now);
    }
    for (const uid of this.#series.keys()) if (!seen.has(uid)) this.#series.delete(uid);
    const fitted = this.#fitted();
    return [...this.#series.values()].flatMap((series) => this.#decide(series, fitted.has(series.usage.uid), now));
  }

  #record(usage: QuotaUsage, now: number): void {
    const series = this.#series.get(usage.uid) ?? { usage, samples: [], level: 0 };
    series.usage = usage;
    series.samples.push({ at: now, used: usage.used });
    const from = now - this.#settings.windowMs;
    while ((series.samples[0]?.at ?? now) < from) series.samples.shift();
    if (series.samples.length > this.#settings.maxSamples)
      series.samples = series.samples.filter((_, index, all) => index % 2 === 1 || index === all.length - 1);
    this.#series.set(usage.uid, series);
  }

  /** The top quotas by usage ratio, plus every one at or above `--quota-warn`. */
  #fitted(): Set<string> {
    const ranked = [...this.#series.values()]
      .map((series) => ({ uid: series.usage.uid, ratio: series.usage.used / series.usage.hard }))
      .sort((a, b) => b.ratio - a.ratio || a.uid.localeCompare(b.uid));
    return new Set(
      ranked
        .filter((entry, index) => index < this.#settings.top || entry.ratio >= this.#settings.warnRatio)
        .map((entry) => entry.uid),
    );
  }

  #forecast(series: Series, fitted: boolean): Forecast {
    const { used, hard } = series.usage;
    const ratio = used / hard;
    if (!fitted || series.samples.length < this.#settings.minSamples) return { ratio };
    const slope = leastSquaresSlope(series.samples);
    if (slope === undefined) return { ratio };
    if (used >= hard) return { ratio, slope, etaMs: 0 };
    return slope > 0 ? { ratio, slope, etaMs: (hard - used) / slope } : { ratio, slope };
  }

  #severity(forecast: Forecast): Severity | undefined {
    const s = this.#settings;
    const { ratio, etaMs } = forecast;
    if (ratio >= s.criticalUsage || (etaMs !== undefined && etaMs < s.criticalEtaMs)) return "critical";
    if (ratio >= s.warnUsage || (etaMs !== undefined && etaMs < s.warnEtaMs)) return "warning";
    return undefined;
  }

  #decide(series: Series, fitted: boolean, now: number): Signal[] {
    const forecast = this.#forecast(series, fitted);
    const severity = this.#severity(forecast);
    if (severity === undefined) {
      // D399: cleared once under 90% with the ETA beyond twice the warning horizon (or none).
      const far = forecast.etaMs === undefined || forecast.etaMs >= 2 * this.#settings.warnEtaMs;
      if (far) series.level = 0;
      return [];
    }
    const level = severity === "critical" ? 2 : 1;
    if (level <= series.level) return [];
    series.level = level;
    return [this.#signal(series, forecast, severity, now)];
  }

  #signal(series: Series, forecast: Forecast, severity: Severity, now: number): Signal {
    const { usage, samples } = series;
    const where = usage.namespace ? `${usage.namespace}/${usage.name}` : usage.name;
    const span = samples.length > 1 ? (samples.at(-1)?.at ?? now) - (samples[0]?.at ?? now) : 0;
    const growth =
      forecast.slope === undefined
        ? ""
        : `, ${forecast.slope > 0 ? "growing" : "not growing:"} ${amount(forecast.slope * DAY, usage.hardText)}/day over the last ${goDuration(span)} (${samples.length} points)`;
    const until =
      forecast.etaMs === undefined
        ? ""
        : forecast.etaMs === 0
          ? " — the limit is reached"
          : ` — the limit is reached in ${eta(forecast.etaMs)} at this slope`;
    return {
      kind: QUOTA_KIND,
      reason: "quota_forecast",
      namespace: usage.namespace,
      kindOfObject: usage.kindOfObject,
      name: usage.name,
      uid: usage.uid,
      message: `${usage.kindOfObject} ${where} ${usage.resource} at ${(forecast.ratio * 100).toFixed(1)}% (used ${usage.usedText} of ${usage.hardText})${growth}${until}`,
      eventCount: 1,
      firstSeen: now,
      lastSeen: now,
      type: "",
      severity,
      ...(forecast.etaMs !== undefined
        ? { forecast: { eta: now + forecast.etaMs, confidenceBasis: forecastBasis(this.#settings.windowMs) } }
        : {}),
    };
  }
}

/** What the quota source needs: list ResourceQuotas cluster-wide; its runner polls the provider (D398). */
export const QUOTA_SPEC: SourceSpec<QuotaSettings> = {
  name: "quota",
  reasons: ["quota_forecast"],
  scope: "cluster",
  required: [{ verb: "list", group: "", resource: "resourcequotas" }],
  watches: [],
  detector: (settings) => new QuotaDetector(settings),
};
