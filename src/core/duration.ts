/**
 * Durations in Go notation (`1h30m0s`, `30s`, `500ms`, `2m`): parsing and formatting. Pure.
 */
import { type Result, err, ok } from "./result.ts";

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * The longest delay a timer can hold (2^31 - 1 ms, about 596h): JavaScript runs a longer one
 * after 1 ms, so an interval past it would fire continuously. Settings that drive timers refuse
 * anything longer.
 */
export const MAX_TIMER_MS = 2_147_483_647;

export function parseDuration(text: string): Result<number> {
  const trimmed = text.trim();
  if (trimmed === "0") return ok(0);
  const pattern = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let match = pattern.exec(trimmed); match; match = pattern.exec(trimmed)) {
    total += Number(match[1]) * (UNIT_MS[match[2] ?? ""] ?? 0);
    consumed = pattern.lastIndex;
  }
  if (trimmed === "" || consumed !== trimmed.length) {
    return err(`invalid duration ${JSON.stringify(text)}: use Go notation such as 30s, 5m or 1h30m0s`);
  }
  return ok(total);
}

export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  if (ms < 1000) return `${ms}ms`;
  let seconds = Math.round(ms / 1000);
  const hours = Math.floor(seconds / 3600);
  seconds -= hours * 3600;
  const minutes = Math.floor(seconds / 60);
  seconds -= minutes * 60;
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}
