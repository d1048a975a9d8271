/**
 * CronJob schedules with the upstream controller's semantics (D381), for the workload detector
 * (core/sources/workload-detector.ts), which gets `cronActivations` through its settings so it
 * stays pure. The maintained `cron-parser` library evaluates the expression and the IANA time
 * zone (`spec.timeZone`; absent: UTC, where the controller manager normally runs); this module
 * first holds it to what Kubernetes accepts: five fields (minute, hour, day of month, month, day
 * of week) of numbers, `*`, `?`, ranges, lists, steps and month/day names; the descriptors
 * `@yearly`/`@annually`, `@monthly`, `@weekly`, `@daily`/`@midnight`, `@hourly`; and
 * `@every <duration>`, a constant delay counted from the previous activation. The library's
 * extensions (seconds, `L`, `#`, `H`, `@minutely`, `@weekdays`) are refused, as the apiserver
 * refuses them.
 */
import { CronExpressionParser } from "cron-parser";
import { parseDuration } from "../../core/duration.ts";
import type { CronActivations } from "../core/sources/workload-detector.ts";

const DESCRIPTORS: Readonly<Record<string, string>> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

const MONTHS = "JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC";
const DAYS = "SUN|MON|TUE|WED|THU|FRI|SAT";
const TOKEN = (names?: string) => new RegExp(`^(\\*|\\?|\\d+${names ? `|${names}` : ""})$`, "i");
/** What one token of each field may be: minute, hour, day of month, month (or its name), day of week (or its name). */
const FIELD_TOKENS = [TOKEN(), TOKEN(), TOKEN(), TOKEN(MONTHS), TOKEN(DAYS)];

/** The five-field expression Kubernetes would run, or why it would not. */
export function upstreamExpression(schedule: string): { expression: string } | { error: string } {
  const trimmed = schedule.trim();
  const descriptor = DESCRIPTORS[trimmed.toLowerCase()];
  if (descriptor) return { expression: descriptor };
  if (trimmed.startsWith("@")) return { error: `unsupported schedule descriptor ${JSON.stringify(trimmed)}` };
  const fields = trimmed.split(/\s+/);
  if (fields.length !== 5)
    return { error: `a schedule has 5 fields, got ${fields.length}: ${JSON.stringify(trimmed)}` };
  for (const [index, value] of fields.entries()) {
    const tokens = value.split(/[,\-/]/);
    const pattern = FIELD_TOKENS[index];
    if (!pattern || tokens.some((token) => !pattern.test(token)))
      return { error: `schedule field ${index + 1} ${JSON.stringify(value)} is not upstream cron syntax` };
  }
  return { expression: trimmed };
}

/** Up to `limit` activations in (after, until], in the schedule's time zone. */
export const cronActivations: CronActivations = (schedule, timeZone, after, until, limit) => {
  const every = /^@every\s+(\S+)$/i.exec(schedule.trim());
  if (every) {
    const delay = parseDuration(every[1] ?? "");
    if (!delay.ok || delay.value < 1000) return { error: `invalid @every schedule ${JSON.stringify(schedule)}` };
    const found: number[] = [];
    for (let at = after + delay.value; at <= until && found.length < limit; at += delay.value) found.push(at);
    return { activations: found };
  }
  const upstream = upstreamExpression(schedule);
  if ("error" in upstream) return upstream;
  try {
    const interval = CronExpressionParser.parse(upstream.expression, {
      currentDate: new Date(after),
      tz: timeZone || "UTC",
    });
    const found: number[] = [];
    while (found.length < limit) {
      const next = interval.next().getTime();
      if (next > until) break;
      if (next > after) found.push(next);
    }
    return { activations: found };
  } catch (caught) {
    return {
      error: `schedule ${JSON.stringify(schedule)} in ${timeZone || "UTC"}: ${caught instanceof Error ? caught.message : String(caught)}`,
    };
  }
};
