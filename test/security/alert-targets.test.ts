/**
 * The alert tool's destinations are the operator's, never the model's (D460, D462): a URL given
 * as the target is an unknown target and nothing is sent; a target URL on a cloud-metadata or
 * link-local literal is refused by the outbound guard although configured (configuration opens
 * loopback and private hosts, never those); neither the target's URL nor a PagerDuty routing key
 * reaches the model's result or the daemon's log, even when the receiver echoes them back.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { AlertSettings } from "../../src/alerts/alert-config.ts";
import { AlertSender, liveAlertTargets } from "../../src/alerts/alert-tool.ts";

const ROUTING_KEY = "R0UTING-KEY-5ecret";
const lines: string[] = [];
const log = {
  info: (m: string) => lines.push(m),
  warn: (m: string) => lines.push(m),
  error: (m: string) => lines.push(m),
};
let receiver: ReturnType<typeof Bun.serve>;
let requests = 0;

beforeAll(() => {
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      requests++;
      // An echoing receiver: its error answer repeats the body (the routing key) and its own URL.
      return new Response(`rejected ${request.url} ${await request.text()}`, { status: 400 });
    },
  });
});

afterAll(() => receiver.stop(true));

const settings = (targets: AlertSettings["targets"]): AlertSettings => ({
  targets,
  rate: { count: 10, periodSeconds: 60, text: "10/min" },
});

function sender(targets: AlertSettings["targets"], env: Record<string, string>): AlertSender {
  const config = settings(targets);
  return new AlertSender(liveAlertTargets(config, env, [], log), config, log);
}

test("a URL named as the target is an unknown target: nothing is sent", async () => {
  const url = `http://127.0.0.1:${receiver.port}/hook`;
  const alerts = sender([{ name: "oncall", urlEnv: "HOOK", template: "generic", description: "d" }], { HOOK: url });
  const before = requests;
  const result = await alerts.run({ target: url, url, level: "critical", summary: "x" }, new AbortController().signal);
  expect(result.isError).toBe(true);
  expect(String(result.output.error)).toContain("known: oncall");
  expect(requests).toBe(before);
});

test("a configured target on a metadata address is refused by the outbound guard, not retried", async () => {
  const alerts = sender([{ name: "meta", urlEnv: "META", template: "generic", description: "d" }], {
    META: "http://169.254.169.254/latest/meta-data/",
  });
  const result = await alerts.run({ target: "meta", level: "critical", summary: "x" }, new AbortController().signal);
  expect(result.output).toMatchObject({ target: "meta", outcome: "failed", attempts: 1 });
  expect(String(result.output.error)).toContain("not in the outbound allow list");
});

test("neither the URL nor the routing key reaches the result or the log, even echoed by the receiver", async () => {
  const url = `http://127.0.0.1:${receiver.port}/v2/enqueue-secret-path`;
  const alerts = sender(
    [{ name: "pd", urlEnv: "PD_URL", template: "pagerduty_events_v2", description: "d", routingKeyEnv: "PD_KEY" }],
    { PD_URL: url, PD_KEY: ROUTING_KEY },
  );
  lines.length = 0;
  const result = await alerts.run({ target: "pd", level: "critical", summary: "x" }, new AbortController().signal);
  expect(result.output).toMatchObject({ target: "pd", outcome: "failed", status_code: 400 });
  const shown = JSON.stringify(result.output) + lines.join("\n");
  expect(shown).toContain("[redacted]");
  expect(shown).not.toContain(ROUTING_KEY);
  expect(shown).not.toContain(url);
});
