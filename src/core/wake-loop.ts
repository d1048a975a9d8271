/**
 * Wake loops, pure (D360-D363): the three loop-control tools a session's model steers its own
 * loop with (`schedule_next_turn`, `return_result`, `report_alert`), their argument checks, the
 * audit rows they leave (author `agent/wake-loop`), the fold that reads a session's pending wake
 * and loop membership back from its log, and the prompt a due wake queues. No I/O.
 */
import type { CommittedRow, SessionEvent } from "./events.ts";
import type { ToolSpec } from "./model.ts";
import { type Result, err, ok } from "./result.ts";

/** The author of every wake-loop row, and the invocation id of rows written outside a turn. */
export const WAKE_LOOP_AUTHOR = "agent/wake-loop";
export const WAKE_SCHEDULED = "wake-scheduled";
export const WAKE_FIRED = "wake-fired";
export const LOOP_RESULT = "loop-result";
export const LOOP_ALERT = "loop-alert";

/** Bounds of a schedule (D360): at least a second ahead, at most seven days. */
export const MIN_WAKE_DELAY_MS = 1000;
export const MAX_WAKE_DELAY_MS = 7 * 24 * 60 * 60 * 1000;
/** The longest reason, result, summary and detail kept on a row. */
export const LOOP_TEXT_MAX = 4000;

export type AlertSeverity = "info" | "warning" | "critical";
const SEVERITIES: readonly AlertSeverity[] = ["info", "warning", "critical"];

/** One scheduled wake: its id (the schedule row's), when it is due, and why. */
export interface ScheduledWake {
  id: string;
  /** RFC 3339 UTC. */
  at: string;
  reason: string;
}

/** The three tools the model is offered (D362), in the shape the catalog lists. */
export const LOOP_CONTROL_SPECS: readonly ToolSpec[] = [
  {
    name: "schedule_next_turn",
    description:
      "Sleep until a later time, then wake for another turn. Give exactly one of `at` (RFC 3339) or " +
      "`delay_seconds` (1 s to 7 days). Ends this turn; a later schedule replaces an earlier one.",
    inputSchema: {
      type: "object",
      properties: {
        at: { type: "string", description: "when to wake, RFC 3339 (e.g. 2026-01-02T15:04:05Z)" },
        delay_seconds: { type: "number", description: "seconds from now (1 to 604800)" },
        reason: { type: "string", description: "what the next turn should do; it is named in the wake prompt" },
      },
      additionalProperties: false,
    },
  },
  {
    name: "return_result",
    description: "End this iteration of the loop with its result (recorded durably). Ends this turn.",
    inputSchema: {
      type: "object",
      properties: { result: { type: "string", description: "the iteration's result" } },
      required: ["result"],
      additionalProperties: false,
    },
  },
  {
    name: "report_alert",
    description: "Record an alert for the operator (info, warning or critical); the turn goes on.",
    inputSchema: {
      type: "object",
      properties: {
        severity: { type: "string", enum: [...SEVERITIES] },
        summary: { type: "string", description: "one line" },
        detail: { type: "string" },
      },
      required: ["severity", "summary"],
      additionalProperties: false,
    },
  },
];

/** `schedule_next_turn`'s arguments checked against `now`: when and why (the id comes from the row). */
export function parseSchedule(args: Record<string, unknown>, now: Date): Result<{ at: string; reason: string }> {
  const { at, delay_seconds: delay, reason } = args;
  if (reason !== undefined && typeof reason !== "string") return err("`reason` must be a string");
  if ((at === undefined) === (delay === undefined)) return err("give exactly one of `at` or `delay_seconds`");
  let due: number;
  if (at !== undefined) {
    if (typeof at !== "string" || !/^\d{4}-\d{2}-\d{2}T/.test(at) || Number.isNaN(Date.parse(at)))
      return err("`at` must be an RFC 3339 time, e.g. 2026-01-02T15:04:05Z");
    due = Date.parse(at);
    if (due <= now.getTime()) return err(`\`at\` ${at} is in the past (now ${now.toISOString()})`);
  } else {
    if (typeof delay !== "number" || !Number.isFinite(delay)) return err("`delay_seconds` must be a number");
    due = now.getTime() + Math.round(delay * 1000);
  }
  const ahead = due - now.getTime();
  if (ahead < MIN_WAKE_DELAY_MS) return err("the wake must be at least 1 second ahead");
  if (ahead > MAX_WAKE_DELAY_MS) return err("the wake must be at most 7 days ahead");
  return ok({ at: new Date(due).toISOString(), reason: shorten(reason ?? "") });
}

/** `return_result`'s argument. */
export function parseResult(args: Record<string, unknown>): Result<string> {
  const { result } = args;
  if (typeof result !== "string" || result.trim() === "") return err("give a non-empty `result` string");
  return ok(shorten(result));
}

export interface LoopAlert {
  severity: AlertSeverity;
  summary: string;
  detail?: string;
}

/** `report_alert`'s arguments. */
export function parseAlert(args: Record<string, unknown>): Result<LoopAlert> {
  const { severity, summary, detail } = args;
  if (typeof severity !== "string" || !SEVERITIES.includes(severity as AlertSeverity))
    return err("`severity` must be one of info, warning, critical");
  if (typeof summary !== "string" || summary.trim() === "") return err("give a non-empty `summary` string");
  if (detail !== undefined && typeof detail !== "string") return err("`detail` must be a string");
  return ok({
    severity: severity as AlertSeverity,
    summary: shorten(summary),
    ...(detail === undefined ? {} : { detail: shorten(detail) }),
  });
}

function shorten(text: string): string {
  return text.length <= LOOP_TEXT_MAX ? text : `${text.slice(0, LOOP_TEXT_MAX)}…`;
}

/** What a session's log says of its loop: the pending wake (latest schedule not fired) and membership. */
export interface WakeLoopState {
  pending?: ScheduledWake;
  /** It has scheduled a wake at least once (D363: a live wake loop for readiness). */
  isLoop: boolean;
}

/** Fold a session's own rows (subagent rows never carry loop rows) into its loop state. */
export function foldWakeLoop(rows: readonly CommittedRow[]): WakeLoopState {
  let pending: ScheduledWake | undefined;
  let isLoop = false;
  for (const { event } of rows) {
    if (event.kind !== "audit" || event.author !== WAKE_LOOP_AUTHOR || event.branch !== undefined) continue;
    const id = event.metadata.id;
    if (event.name === WAKE_SCHEDULED) {
      const { at, reason } = event.metadata;
      if (typeof id !== "string" || typeof at !== "string") continue;
      isLoop = true;
      pending = { id, at, reason: typeof reason === "string" ? reason : "" };
    } else if (event.name === WAKE_FIRED && pending?.id === id) pending = undefined;
  }
  return pending === undefined ? { isLoop } : { pending, isLoop };
}

/** The prompt a due wake queues: it names the schedule (its id, time and reason). */
export function wakePrompt(wake: ScheduledWake): string {
  const why = wake.reason === "" ? "" : `: ${wake.reason}`;
  return `[scheduled wake ${wake.id}, due ${wake.at}]${why}`;
}

/** The idempotency key a due wake is injected under: a second firing is a duplicate (D360). */
export function wakeIdempotencyKey(wake: Pick<ScheduledWake, "id">): string {
  return `wake-loop:${wake.id}`;
}

/** Loop rows that end the turn they are written in (a restart after them cut nothing). */
export function endsLoopTurn(event: SessionEvent): boolean {
  return (
    event.kind === "audit" &&
    event.author === WAKE_LOOP_AUTHOR &&
    (event.name === WAKE_SCHEDULED || event.name === LOOP_RESULT)
  );
}
