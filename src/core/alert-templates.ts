/**
 * The `alert` tool's message and the request bodies its target templates make of it (D461):
 * `generic` (the message as JSON: `{level, summary, details?}`, no timestamp), `switchboard` (a
 * chat gateway: one text line into a named conversation), `slack` and `discord` (their incoming
 * webhook shapes, mentions disabled) and `pagerduty_events_v2` (an Events API v2 trigger, or a
 * resolve for level `resolved`). Also the argument check of a call. Pure.
 */
import { type Result, err, ok } from "./result.ts";

export const ALERT_LEVELS = ["info", "warning", "critical", "resolved"] as const;
export type AlertLevel = (typeof ALERT_LEVELS)[number];

export const ALERT_TEMPLATES = ["generic", "switchboard", "slack", "discord", "pagerduty_events_v2"] as const;
export type AlertTemplate = (typeof ALERT_TEMPLATES)[number];

/** The longest summary a call may send (a one-liner). */
export const ALERT_SUMMARY_MAX = 1000;
/** The largest `details` object a call may send, as JSON. */
export const ALERT_DETAILS_MAX_BYTES = 16 * 1024;

/** What the model sends: a level, a one-line summary and an optional object of details. */
export interface AlertMessage {
  level: AlertLevel;
  summary: string;
  details?: Record<string, unknown>;
}

/** What a template needs of its target besides the message. */
export interface TemplateTarget {
  template: AlertTemplate;
  /** switchboard: the conversation the message goes to. */
  conversation?: string;
  /** pagerduty_events_v2: the integration's routing key (read from the environment). */
  routingKey?: string;
}

export function isAlertTemplate(value: unknown): value is AlertTemplate {
  return typeof value === "string" && (ALERT_TEMPLATES as readonly string[]).includes(value);
}

/** The call's arguments but `target` (checked against the configured targets by the caller). */
export function parseAlertMessage(args: Record<string, unknown>): Result<AlertMessage> {
  const { level, summary, details } = args;
  if (typeof level !== "string" || !(ALERT_LEVELS as readonly string[]).includes(level))
    return err(`\`level\` must be one of ${ALERT_LEVELS.join(", ")}`);
  if (typeof summary !== "string" || summary.trim() === "") return err("give a non-empty one-line `summary`");
  if (summary.length > ALERT_SUMMARY_MAX) return err(`\`summary\` must be at most ${ALERT_SUMMARY_MAX} characters`);
  if (details !== undefined && (typeof details !== "object" || details === null || Array.isArray(details)))
    return err("`details` must be an object");
  if (details !== undefined && Buffer.byteLength(JSON.stringify(details), "utf8") > ALERT_DETAILS_MAX_BYTES)
    return err(`\`details\` must be at most ${ALERT_DETAILS_MAX_BYTES} bytes as JSON`);
  const message: AlertMessage = { level: level as AlertLevel, summary: summary.trim() };
  if (details !== undefined && Object.keys(details).length > 0) message.details = details as Record<string, unknown>;
  return ok(message);
}

/** `text` cut to `max` characters, an ellipsis marking the cut. */
function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** "[CRITICAL] summary" plus the details as indented JSON, for the chat templates. */
function chatText(message: AlertMessage, max: number): string {
  const head = `[${message.level.toUpperCase()}] ${message.summary}`;
  if (message.details === undefined) return clip(head, max);
  return clip(`${head}\n\`\`\`\n${JSON.stringify(message.details, null, 2)}\n\`\`\``, max);
}

const DISCORD_COLOURS: Record<AlertLevel, number> = {
  info: 0x3498db,
  warning: 0xf1c40f,
  critical: 0xe74c3c,
  resolved: 0x2ecc71,
};

/** The incident a PagerDuty event belongs to: `details.dedup_key`, else `details.uid`. */
function pagerDutyKey(message: AlertMessage): string | undefined {
  for (const key of ["dedup_key", "uid"]) {
    const value = message.details?.[key];
    if (typeof value === "string" && value.trim() !== "") return clip(value.trim(), 255);
  }
  return undefined;
}

function pagerDutyBody(message: AlertMessage, target: TemplateTarget): Result<Record<string, unknown>> {
  const dedupKey = pagerDutyKey(message);
  if (message.level === "resolved") {
    if (dedupKey === undefined)
      return err("level resolved on a pagerduty_events_v2 target needs `details.dedup_key` or `details.uid`");
    return ok({ routing_key: target.routingKey, event_action: "resolve", dedup_key: dedupKey });
  }
  return ok({
    routing_key: target.routingKey,
    event_action: "trigger",
    ...(dedupKey === undefined ? {} : { dedup_key: dedupKey }),
    payload: {
      summary: clip(message.summary, 1024),
      source: "spar",
      severity: message.level,
      ...(message.details === undefined ? {} : { custom_details: message.details }),
    },
  });
}

/** The JSON body a target's template makes of a message; an error when the message cannot be sent there. */
export function renderAlertBody(message: AlertMessage, target: TemplateTarget): Result<Record<string, unknown>> {
  switch (target.template) {
    case "generic":
      return ok({
        level: message.level,
        summary: message.summary,
        ...(message.details === undefined ? {} : { details: message.details }),
      });
    case "switchboard":
      return ok({ conversation: target.conversation, text: chatText(message, 8000) });
    case "slack":
      return ok({ text: chatText(message, 3000) });
    case "discord":
      return ok({
        content: clip(`**${message.level.toUpperCase()}**: ${message.summary}`, 2000),
        embeds: [
          {
            title: clip(message.summary, 256),
            color: DISCORD_COLOURS[message.level],
            ...(message.details === undefined
              ? {}
              : { description: clip(`\`\`\`json\n${JSON.stringify(message.details, null, 2)}\n\`\`\``, 4096) }),
          },
        ],
        allowed_mentions: { parse: [] },
      });
    case "pagerduty_events_v2":
      return pagerDutyBody(message, target);
  }
}
