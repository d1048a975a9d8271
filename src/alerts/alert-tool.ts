/**
 * The `alert` tool (D460-D463): the model pages a target the operator configured, by name, never
 * by URL. Targets come from `alerts.targets` with their URLs (and PagerDuty routing keys) read
 * from the environment at startup: a target whose variable is unset is dropped with one stderr
 * line, and with none left the tool is not offered (also said on stderr). A call: the target is
 * looked up (an unknown name is an error result naming the known ones), its token bucket
 * (`alerts.rate_limit_per_target`, default 10/min, one per target for the daemon) gives a token or
 * a refusal saying when to retry, the template renders the body and alert-delivery.ts delivers it
 * with bounded retries. The outcome (`delivered`, `failed` after N attempts, `rate_limited`) is
 * the call's result, committed as its tool-result row in the session (D463), and a line in the
 * daemon's log. Classed mutating: in `ask` mode the operator approves each page.
 */
import type { AlertSettings, AlertTargetSpec } from "./alert-config.ts";
import { uuidv7 } from "../core/ids.ts";
import { type AlertMessage, parseAlertMessage, renderAlertBody } from "../core/alert-templates.ts";
import { SparError } from "../core/errors.ts";
import type { ToolSpec } from "../core/model.ts";
import type { ToolCatalog, ToolRunResult, ToolRunner } from "../core/tool-catalog.ts";
import { declaredHostEntry, parseOutboundAllowList } from "../net/outbound-allow-list.ts";
import { OutboundGuard } from "../net/outbound-guard.ts";
import { RateLimiter } from "../surfaces/http/rate-limiter.ts";
import { ToolsInFront } from "../tools/tools-in-front.ts";
import { DEFAULT_DELIVERY_POLICY, type DeliveryPolicy, deliverAlert } from "./alert-delivery.ts";

export const ALERT_TOOL = "alert";

type Env = Readonly<Record<string, string | undefined>>;

/** A target that survived startup: its URL, its guard, its routing key. */
export interface LiveAlertTarget extends AlertTargetSpec {
  url: string;
  routingKey?: string;
  guard: OutboundGuard;
}

export interface AlertLog {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

function variable(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

/** The guard of one target: the operator's `outbound.allow` plus the URL's own host (D462). */
function targetGuard(url: string, outboundAllow: readonly string[]): OutboundGuard {
  const own = declaredHostEntry(url);
  const parsed = parseOutboundAllowList(own === undefined ? outboundAllow : [...outboundAllow, own]);
  if (!parsed.ok) throw new SparError("bad_request", parsed.error);
  return new OutboundGuard({ allow: parsed.value });
}

/**
 * The targets whose variables are set (D460); each dropped one is one warning, and a list that
 * ends empty is said once more. A set URL that is not an absolute http(s) URL stops the start
 * (the message names the variable, never its value).
 */
export function liveAlertTargets(
  settings: AlertSettings,
  env: Env,
  outboundAllow: readonly string[],
  log: AlertLog,
): LiveAlertTarget[] {
  const live: LiveAlertTarget[] = [];
  for (const spec of settings.targets) {
    const url = variable(env, spec.urlEnv);
    const routingKey = spec.routingKeyEnv === undefined ? undefined : variable(env, spec.routingKeyEnv);
    const missing =
      url === undefined
        ? spec.urlEnv
        : spec.routingKeyEnv !== undefined && routingKey === undefined
          ? spec.routingKeyEnv
          : undefined;
    if (missing !== undefined || url === undefined) {
      log.warn(`alerts: target ${spec.name} dropped: the variable ${missing} is not set`);
      continue;
    }
    if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol))
      throw new SparError(
        "bad_request",
        `alerts: target ${spec.name}: the variable ${spec.urlEnv} does not hold an absolute http or https URL`,
      );
    live.push({
      ...spec,
      url,
      ...(routingKey === undefined ? {} : { routingKey }),
      guard: targetGuard(url, outboundAllow),
    });
  }
  if (settings.targets.length > 0 && live.length === 0)
    log.warn("alerts: no alert target remains (every URL variable is unset): the alert tool is not offered");
  return live;
}

/** The tool as the model sees it: the target names as an enum, each described. */
export function alertSpec(targets: readonly LiveAlertTarget[]): ToolSpec {
  const listed = targets.map((target) => `${target.name} (${target.description})`).join("; ");
  return {
    name: ALERT_TOOL,
    description: `Send an alert to a configured target, by name (there is no URL parameter). Targets: ${listed}. The result says whether it was delivered, failed after retries, or was rate limited (with when to retry).`,
    inputSchema: {
      type: "object",
      properties: {
        target: { type: "string", enum: targets.map((target) => target.name), description: "the target's name" },
        level: { type: "string", enum: ["info", "warning", "critical", "resolved"] },
        summary: { type: "string", description: "one line" },
        details: { type: "object", description: "optional structured details (at most 16 KiB as JSON)" },
      },
      required: ["target", "level", "summary"],
      additionalProperties: false,
    },
  };
}

const failure = (output: Record<string, unknown>): ToolRunResult => ({ output, isError: true });

/** Runs `alert` calls for the daemon: one token bucket per target across every session. */
export class AlertSender {
  readonly #targets: ReadonlyMap<string, LiveAlertTarget>;
  readonly #settings: AlertSettings;
  readonly #limiter: RateLimiter;
  readonly #log: AlertLog;
  readonly #policy: DeliveryPolicy;
  readonly spec: ToolSpec;

  constructor(
    targets: readonly LiveAlertTarget[],
    settings: AlertSettings,
    log: AlertLog,
    policy = DEFAULT_DELIVERY_POLICY,
  ) {
    this.#targets = new Map(targets.map((target) => [target.name, target]));
    this.#settings = settings;
    this.#limiter = new RateLimiter({
      perSecond: settings.rate.count / settings.rate.periodSeconds,
      burst: settings.rate.count,
    });
    this.#log = log;
    this.#policy = policy;
    this.spec = alertSpec(targets);
  }

  async run(args: Record<string, unknown>, signal: AbortSignal): Promise<ToolRunResult> {
    const name = args.target;
    const target = typeof name === "string" ? this.#targets.get(name) : undefined;
    if (target === undefined)
      return failure({
        error: `no alert target ${JSON.stringify(name ?? null)} (known: ${[...this.#targets.keys()].join(", ")}); name a target, never a URL`,
      });
    const message = parseAlertMessage(args);
    if (!message.ok) return failure({ target: target.name, error: `invalid input for alert: ${message.error}` });
    const body = renderAlertBody(message.value, target);
    if (!body.ok) return failure({ target: target.name, error: body.error });
    const token = this.#limiter.take(target.name);
    if (!token.allowed) return this.#limited(target, token.retryAfterSeconds);
    return await this.#deliver(target, message.value, body.value, signal);
  }

  #limited(target: LiveAlertTarget, retryAfterSeconds: number): ToolRunResult {
    const error = `not sent: target ${target.name} is rate limited (${this.#settings.rate.text}); retry in ${retryAfterSeconds} s`;
    this.#log.warn(`alerts: ${error}`);
    return failure({ target: target.name, outcome: "rate_limited", retry_after_seconds: retryAfterSeconds, error });
  }

  async #deliver(
    target: LiveAlertTarget,
    message: AlertMessage,
    body: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ToolRunResult> {
    const alertId = uuidv7();
    const base = { target: target.name, alert_id: alertId };
    let outcome: Awaited<ReturnType<typeof deliverAlert>>;
    try {
      outcome = await deliverAlert(
        target.guard,
        { url: target.url, body, idempotencyKey: alertId, signal },
        this.#policy,
      );
    } catch (thrown) {
      if (!signal.aborted) throw thrown;
      this.#log.warn(
        `alerts: ${message.level} alert ${alertId} to ${target.name} stopped by the turn's end; it may not have been delivered`,
      );
      return failure({
        ...base,
        outcome: "canceled",
        error: "stopped: the turn was cancelled; the alert may not have been delivered",
      });
    }
    const tries = `${outcome.attempts} attempt${outcome.attempts === 1 ? "" : "s"}`;
    if (outcome.delivered) {
      this.#log.info(
        `alerts: ${message.level} alert ${alertId} delivered to ${target.name} (HTTP ${outcome.statusCode}, ${tries})`,
      );
      return {
        output: {
          ...base,
          outcome: "delivered",
          status_code: outcome.statusCode,
          attempts: outcome.attempts,
          duration_ms: outcome.durationMs,
        },
        isError: false,
      };
    }
    const error = this.#scrub(`not delivered after ${tries}: ${outcome.error}`, target);
    this.#log.error(`alerts: ${message.level} alert ${alertId} to ${target.name} ${error}`);
    return failure({
      ...base,
      outcome: "failed",
      attempts: outcome.attempts,
      duration_ms: outcome.durationMs,
      ...(outcome.statusCode === undefined ? {} : { status_code: outcome.statusCode }),
      error,
    });
  }

  /** A receiver echoing the routing key cannot hand it to the model. */
  #scrub(text: string, target: LiveAlertTarget): string {
    return target.routingKey === undefined ? text : text.split(target.routingKey).join("[redacted]");
  }
}

/** Another runner and catalog with `alert` in front. */
export class AlertTools extends ToolsInFront {
  constructor(inner: ToolRunner & ToolCatalog, sender: AlertSender) {
    super(inner, {
      specs: () => [sender.spec],
      toolClass: "mutating",
      source: "builtin",
      run: (call, signal) => sender.run(call.args, signal),
    });
  }
}

/** What puts `alert` in front of the core's tools; undefined when no target survives (the tool is absent). */
export function alertFrontTools(
  settings: AlertSettings,
  env: Env,
  outboundAllow: readonly string[],
  log: AlertLog,
): ((inner: ToolRunner & ToolCatalog) => ToolRunner & ToolCatalog) | undefined {
  const targets = liveAlertTargets(settings, env, outboundAllow, log);
  if (targets.length === 0) return undefined;
  const sender = new AlertSender(targets, settings, log);
  return (inner) => new AlertTools(inner, sender);
}
