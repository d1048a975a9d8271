/**
 * The alert settings and templates (D460, D461): `alerts.targets` entries checked once at start
 * (each bad one an error naming the entry and the key), `alerts.rate_limit_per_target` parsed, a
 * call's arguments checked, and the body each of the five templates makes of a message.
 */
import { describe, expect, test } from "bun:test";
import { DEFAULT_ALERT_RATE, parseAlertRate, resolveAlertSettings } from "../../../src/alerts/alert-config.ts";
import { type AlertMessage, parseAlertMessage, renderAlertBody } from "../../../src/core/alert-templates.ts";

const settings = (alerts: Record<string, unknown>) =>
  resolveAlertSettings(new Map(Object.entries(alerts).map(([key, value]) => [`alerts.${key}`, value])));

const errorOf = (alerts: Record<string, unknown>) => {
  const result = settings(alerts);
  return result.ok ? "" : result.error;
};

describe("alerts.targets and alerts.rate_limit_per_target", () => {
  test("absent: no targets at 10/min; an entry without a template is generic", () => {
    expect(settings({})).toEqual({ ok: true, value: { targets: [], rate: DEFAULT_ALERT_RATE } });
    const result = settings({ targets: [{ name: "oncall", url_env: "ONCALL_WEBHOOK_URL" }] });
    expect(result.ok && result.value.targets).toEqual([
      { name: "oncall", urlEnv: "ONCALL_WEBHOOK_URL", template: "generic", description: "alert target oncall" },
    ]);
  });

  test("rates per second, minute and hour; anything else is refused naming the key", () => {
    expect(parseAlertRate("5/sec")).toEqual({ ok: true, value: { count: 5, periodSeconds: 1, text: "5/sec" } });
    expect(parseAlertRate("10/min")).toEqual({ ok: true, value: DEFAULT_ALERT_RATE });
    expect(parseAlertRate(" 100 / hour ")).toEqual({
      ok: true,
      value: { count: 100, periodSeconds: 3600, text: "100/hour" },
    });
    for (const bad of ["ten/min", "0/min", "10/fortnight", 10, "10"])
      expect(errorOf({ rate_limit_per_target: bad })).toContain("alerts.rate_limit_per_target");
  });

  test("a bad entry is an error naming the entry and the field", () => {
    expect(errorOf({ targets: { name: "x" } })).toContain("must be a list of targets");
    expect(errorOf({ targets: [{ url_env: "U" }] })).toContain("alerts.targets[0].name");
    expect(errorOf({ targets: [{ name: "a" }] })).toContain("alerts.targets[0].url_env is required");
    expect(errorOf({ targets: [{ name: "a", url_env: "https://hooks.example/x" }] })).toContain(
      "must name an environment variable",
    );
    expect(errorOf({ targets: [{ name: "a", url_env: "U", url: "https://hooks.example/x" }] })).toContain(
      "unknown key url",
    );
    expect(errorOf({ targets: [{ name: "a", url_env: "U", template: "email" }] })).toContain(
      "template must be one of generic, switchboard, slack, discord, pagerduty_events_v2",
    );
    expect(
      errorOf({
        targets: [
          { name: "a", url_env: "U" },
          { name: "a", url_env: "V" },
        ],
      }),
    ).toContain("alerts.targets[1]: the name a is used twice");
  });

  test("template fields: switchboard needs a conversation, PagerDuty a routing key variable, and no other template takes them", () => {
    expect(errorOf({ targets: [{ name: "a", url_env: "U", template: "switchboard" }] })).toContain(
      "needs conversation",
    );
    expect(errorOf({ targets: [{ name: "a", url_env: "U", template: "pagerduty_events_v2" }] })).toContain(
      "needs routing_key_env",
    );
    expect(errorOf({ targets: [{ name: "a", url_env: "U", conversation: "ops" }] })).toContain(
      "applies only to the switchboard template",
    );
    const result = settings({
      targets: [{ name: "pd", url_env: "U", template: "pagerduty_events_v2", routing_key_env: "PD_KEY" }],
    });
    expect(result.ok && result.value.targets[0]?.routingKeyEnv).toBe("PD_KEY");
  });
});

describe("a call's message", () => {
  test("level from the four, a non-empty one-line summary, details an object (empty: left out)", () => {
    expect(parseAlertMessage({ level: "critical", summary: " down ", details: {} })).toEqual({
      ok: true,
      value: { level: "critical", summary: "down" },
    });
    const bad = (args: Record<string, unknown>) => {
      const result = parseAlertMessage(args);
      return result.ok ? "" : result.error;
    };
    expect(bad({ level: "page", summary: "x" })).toContain("info, warning, critical, resolved");
    expect(bad({ level: "info", summary: "  " })).toContain("summary");
    expect(bad({ level: "info", summary: "x", details: [1] })).toContain("`details` must be an object");
    expect(bad({ level: "info", summary: "x", details: { blob: "x".repeat(17 * 1024) } })).toContain("16384 bytes");
  });
});

describe("the templates' bodies", () => {
  const message: AlertMessage = { level: "critical", summary: "web-1 down", details: { uid: "u-1" } };

  test("generic: level, summary and details; no details key when there are none, no timestamp", () => {
    expect(renderAlertBody(message, { template: "generic" })).toEqual({
      ok: true,
      value: { level: "critical", summary: "web-1 down", details: { uid: "u-1" } },
    });
    expect(renderAlertBody({ level: "info", summary: "fyi" }, { template: "generic" })).toEqual({
      ok: true,
      value: { level: "info", summary: "fyi" },
    });
  });

  test("switchboard and slack: one text line with the details as a block; switchboard names its conversation", () => {
    const board = renderAlertBody(message, { template: "switchboard", conversation: "sre-pages" });
    expect(board.ok && board.value.conversation).toBe("sre-pages");
    expect(board.ok && String(board.value.text)).toStartWith("[CRITICAL] web-1 down\n```");
    const slack = renderAlertBody(message, { template: "slack" });
    expect(slack.ok && Object.keys(slack.value)).toEqual(["text"]);
    expect(slack.ok && String(slack.value.text)).toContain('"uid": "u-1"');
  });

  test("discord: content and one embed coloured by level, mentions disabled", () => {
    const body = renderAlertBody(message, { template: "discord" });
    expect(body.ok && body.value).toMatchObject({
      content: "**CRITICAL**: web-1 down",
      embeds: [{ title: "web-1 down", color: 0xe74c3c }],
      allowed_mentions: { parse: [] },
    });
  });

  test("pagerduty_events_v2: a trigger keyed by details.uid, a resolve needs a key", () => {
    const target = { template: "pagerduty_events_v2" as const, routingKey: "R0UTING" };
    expect(renderAlertBody(message, target)).toEqual({
      ok: true,
      value: {
        routing_key: "R0UTING",
        event_action: "trigger",
        dedup_key: "u-1",
        payload: { summary: "web-1 down", source: "spar", severity: "critical", custom_details: { uid: "u-1" } },
      },
    });
    expect(renderAlertBody({ ...message, level: "resolved" }, target)).toEqual({
      ok: true,
      value: { routing_key: "R0UTING", event_action: "resolve", dedup_key: "u-1" },
    });
    const keyless = renderAlertBody({ level: "resolved", summary: "ok" }, target);
    expect(keyless.ok ? "" : keyless.error).toContain("needs `details.dedup_key` or `details.uid`");
  });
});
