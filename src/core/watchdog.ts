/**
 * The watchdog's loop detectors over the tool calls of one turn. Two detectors: the same call
 * (name and arguments) issued again and again, and a short cycle of distinct calls repeating
 * (A B A B ..., A B C A B C ...). Each raises a `warning` once its pattern is established and a
 * `critical` signal when it persists; a call that breaks the pattern re-arms both. Pure.
 */
import type { ToolCall } from "./events.ts";

export const WATCHDOG_MODES = ["off", "warn", "feedback", "enforce"] as const;
export type WatchdogMode = (typeof WATCHDOG_MODES)[number];

export type WatchdogDetector = "repeated-tool-call" | "alternating-tool-cycle";
export type WatchdogSeverity = "warning" | "critical";

export interface WatchdogSignal {
  detector: WatchdogDetector;
  severity: WatchdogSeverity;
  /** Operator- and model-facing description of the loop. */
  message: string;
}

export interface WatchdogThresholds {
  /** Identical calls in a row that raise a warning / a critical signal. */
  repeatWarning: number;
  repeatCritical: number;
  /** Full repetitions of a cycle of 2..maxCycle distinct calls that raise each signal. */
  cycleWarning: number;
  cycleCritical: number;
  maxCycle: number;
}

export const DEFAULT_WATCHDOG_THRESHOLDS: WatchdogThresholds = Object.freeze({
  repeatWarning: 3,
  repeatCritical: 5,
  cycleWarning: 3,
  cycleCritical: 4,
  maxCycle: 3,
});

/** Canonical fingerprint of a call: its name and its arguments with keys sorted. */
export function callFingerprint(call: Pick<ToolCall, "name" | "args">): string {
  return `${call.name}(${canonicalJson(call.args)})`;
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${canonicalJson(inner)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** One turn's detector state. */
export class LoopDetector {
  readonly #thresholds: WatchdogThresholds;
  readonly #calls: string[] = [];
  readonly #names: string[] = [];
  /** Highest severity already raised for the current pattern, per detector. */
  readonly #raised = new Map<WatchdogDetector, WatchdogSeverity>();

  constructor(thresholds: WatchdogThresholds = DEFAULT_WATCHDOG_THRESHOLDS) {
    this.#thresholds = thresholds;
  }

  /** Record a proposed call; returns the signal it raises, if any (at most one per call). */
  observe(call: Pick<ToolCall, "name" | "args">): WatchdogSignal | undefined {
    this.#calls.push(callFingerprint(call));
    this.#names.push(call.name);
    const limit =
      Math.max(this.#thresholds.repeatCritical, this.#thresholds.cycleCritical * this.#thresholds.maxCycle) + 1;
    if (this.#calls.length > limit) {
      this.#calls.shift();
      this.#names.shift();
    }
    return this.#repeated() ?? this.#cycle();
  }

  #repeated(): WatchdogSignal | undefined {
    const run = this.#trailingRun();
    const name = this.#names[this.#names.length - 1] ?? "";
    const severity =
      run >= this.#thresholds.repeatCritical
        ? "critical"
        : run >= this.#thresholds.repeatWarning
          ? "warning"
          : undefined;
    return this.#raise("repeated-tool-call", severity, `the agent issued the same ${name} call ${run} times in a row`);
  }

  #cycle(): WatchdogSignal | undefined {
    for (let period = 2; period <= this.#thresholds.maxCycle; period++) {
      const repetitions = this.#trailingCycleRepetitions(period);
      if (repetitions < this.#thresholds.cycleWarning) continue;
      const severity = repetitions >= this.#thresholds.cycleCritical ? "critical" : "warning";
      const names = this.#names.slice(-period).join(" -> ");
      return this.#raise(
        "alternating-tool-cycle",
        severity,
        `the agent cycled through ${names} ${repetitions} times without progress`,
      );
    }
    this.#raised.delete("alternating-tool-cycle");
    return undefined;
  }

  #raise(
    detector: WatchdogDetector,
    severity: WatchdogSeverity | undefined,
    message: string,
  ): WatchdogSignal | undefined {
    if (severity === undefined) {
      this.#raised.delete(detector);
      return undefined;
    }
    const previous = this.#raised.get(detector);
    if (previous === severity || previous === "critical") return undefined;
    this.#raised.set(detector, severity);
    return { detector, severity, message };
  }

  #trailingRun(): number {
    const last = this.#calls[this.#calls.length - 1];
    let run = 0;
    for (let index = this.#calls.length - 1; index >= 0 && this.#calls[index] === last; index--) run++;
    return run;
  }

  /** Whole repetitions of the last `period` calls (which must be pairwise distinct). */
  #trailingCycleRepetitions(period: number): number {
    const calls = this.#calls;
    if (calls.length < period * 2) return 0;
    const cycle = calls.slice(-period);
    if (new Set(cycle).size !== period) return 0;
    let matched = period;
    while (matched < calls.length && calls[calls.length - 1 - matched] === cycle[cycle.length - 1 - (matched % period)])
      matched++;
    return Math.floor(matched / period);
  }
}

/** The `[watchdog]` block prepended to the next prompt in feedback and enforce modes. */
export function watchdogFeedbackBlock(signals: readonly WatchdogSignal[]): string {
  const lines = signals.map((signal) => `- ${signal.severity}: ${signal.message}`);
  return `[watchdog]\n${lines.join("\n")}\nChange approach instead of repeating the same tool calls.\n[/watchdog]`;
}
