/**
 * The alert targets of the config file (D460): `alerts.targets`, a list of
 * `{name, url_env, template?, description?, conversation?, routing_key_env?}`, and
 * `alerts.rate_limit_per_target` (`N/sec`, `N/min` or `N/hour`, default `10/min`). Each entry is
 * checked once at start; a bad one is an error naming the entry and the key. Which targets
 * survive (their variables set) is decided where the daemon starts (alert-tool.ts).
 */
import { type AlertTemplate, ALERT_TEMPLATES, isAlertTemplate } from "../core/alert-templates.ts";
import { type Result, err, ok } from "../core/result.ts";

export const ALERT_TARGETS_KEY = "alerts.targets";
export const ALERT_RATE_KEY = "alerts.rate_limit_per_target";

/** One configured target: the model names it; the URL stays in the variable `urlEnv` names. */
export interface AlertTargetSpec {
  name: string;
  urlEnv: string;
  template: AlertTemplate;
  description: string;
  conversation?: string;
  routingKeyEnv?: string;
}

/** Alerts a target takes per `periodSeconds`: the bucket holds `count` and refills over the period. */
export interface AlertRate {
  count: number;
  periodSeconds: number;
  /** As configured (`10/min`), for messages. */
  text: string;
}

export interface AlertSettings {
  targets: AlertTargetSpec[];
  rate: AlertRate;
}

export const DEFAULT_ALERT_RATE: AlertRate = { count: 10, periodSeconds: 60, text: "10/min" };

const ENTRY_KEYS = new Set(["name", "url_env", "template", "description", "conversation", "routing_key_env"]);
const TARGET_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PERIODS: Record<string, number> = { s: 1, sec: 1, second: 1, m: 60, min: 60, minute: 60, h: 3600, hour: 3600 };

/** `10/min`: a count from 1 to 10000 per second, minute or hour. */
export function parseAlertRate(value: unknown): Result<AlertRate> {
  const match = typeof value === "string" ? /^\s*(\d+)\s*\/\s*([a-z]+)\s*$/.exec(value) : null;
  const count = Number(match?.[1]);
  const period = PERIODS[match?.[2] ?? ""];
  if (match === null || period === undefined || !(count >= 1 && count <= 10_000))
    return err(`config key ${ALERT_RATE_KEY} must be a rate such as "10/min" (1 to 10000 per sec, min or hour)`);
  return ok({ count, periodSeconds: period, text: `${count}/${match[2]}` });
}

function stringField(fields: Record<string, unknown>, key: string, where: string): Result<string | undefined> {
  const value = fields[key];
  if (value === undefined) return ok(undefined);
  if (typeof value !== "string" || value.trim() === "") return err(`${where}.${key} must be a non-empty string`);
  return ok(value.trim());
}

function envField(fields: Record<string, unknown>, key: string, where: string): Result<string | undefined> {
  const value = stringField(fields, key, where);
  if (value.ok && value.value !== undefined && !ENV_NAME.test(value.value))
    return err(`${where}.${key} must name an environment variable (letters, digits, _), not hold a value`);
  return value;
}

/** The fields one template needs besides the URL: a conversation, a routing key's variable. */
function templateFields(
  template: AlertTemplate,
  conversation: string | undefined,
  routingKeyEnv: string | undefined,
  where: string,
): Result<Pick<AlertTargetSpec, "conversation" | "routingKeyEnv">> {
  if (conversation !== undefined && template !== "switchboard")
    return err(`${where}.conversation applies only to the switchboard template`);
  if (routingKeyEnv !== undefined && template !== "pagerduty_events_v2")
    return err(`${where}.routing_key_env applies only to the pagerduty_events_v2 template`);
  if (template === "switchboard" && conversation === undefined)
    return err(`${where}: the switchboard template needs conversation`);
  if (template === "pagerduty_events_v2" && routingKeyEnv === undefined)
    return err(`${where}: the pagerduty_events_v2 template needs routing_key_env`);
  return ok({
    ...(conversation === undefined ? {} : { conversation }),
    ...(routingKeyEnv === undefined ? {} : { routingKeyEnv }),
  });
}

function targetEntry(entry: unknown, where: string): Result<AlertTargetSpec> {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry))
    return err(`${where} must be an object with name and url_env`);
  const fields = entry as Record<string, unknown>;
  const unknown = Object.keys(fields).find((key) => !ENTRY_KEYS.has(key));
  if (unknown !== undefined) return err(`${where}: unknown key ${unknown} (known: ${[...ENTRY_KEYS].join(", ")})`);
  const { name, template = "generic" } = fields;
  if (typeof name !== "string" || !TARGET_NAME.test(name))
    return err(`${where}.name must be letters, digits, _ and - (up to 64)`);
  const urlEnv = envField(fields, "url_env", where);
  if (!urlEnv.ok) return urlEnv;
  if (urlEnv.value === undefined) return err(`${where}.url_env is required: the variable holding the target's URL`);
  if (!isAlertTemplate(template)) return err(`${where}.template must be one of ${ALERT_TEMPLATES.join(", ")}`);
  const description = stringField(fields, "description", where);
  if (!description.ok) return description;
  const conversation = stringField(fields, "conversation", where);
  if (!conversation.ok) return conversation;
  const routingKeyEnv = envField(fields, "routing_key_env", where);
  if (!routingKeyEnv.ok) return routingKeyEnv;
  const extra = templateFields(template, conversation.value, routingKeyEnv.value, where);
  if (!extra.ok) return extra;
  return ok({
    name,
    urlEnv: urlEnv.value,
    template,
    description: description.value ?? `alert target ${name}`,
    ...extra.value,
  });
}

/** `alerts.targets` and `alerts.rate_limit_per_target` (absent: no targets, 10/min). */
export function resolveAlertSettings(config: ReadonlyMap<string, unknown>): Result<AlertSettings> {
  const rateValue = config.get(ALERT_RATE_KEY);
  const rate = rateValue === undefined ? ok(DEFAULT_ALERT_RATE) : parseAlertRate(rateValue);
  if (!rate.ok) return rate;
  const value = config.get(ALERT_TARGETS_KEY);
  if (value === undefined) return ok({ targets: [], rate: rate.value });
  if (!Array.isArray(value)) return err(`config key ${ALERT_TARGETS_KEY} must be a list of targets`);
  const targets: AlertTargetSpec[] = [];
  for (const [index, entry] of value.entries()) {
    const where = `config key ${ALERT_TARGETS_KEY}[${index}]`;
    const target = targetEntry(entry, where);
    if (!target.ok) return target;
    if (targets.some((other) => other.name === target.value.name))
      return err(`${where}: the name ${target.value.name} is used twice`);
    targets.push(target.value);
  }
  return ok({ targets, rate: rate.value });
}
