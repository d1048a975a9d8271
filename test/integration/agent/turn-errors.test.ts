/**
 * Provider failures become the spec's turn-error kinds on /events, each with `retryable`, `code`
 * and (where the spec asks) a `hint`; driven by scripted failures in a real daemon.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Daemon, postJson } from "../../support/daemon.ts";
import { type ScriptedDaemon, failWith, startScripted } from "../../support/scripted.ts";
import type { Collector } from "../../support/sse-client.ts";

const failures: Array<[string, string, Record<string, unknown>]> = [
  ["429", "slow down", { kind: "rate_limited", retryable: true, code: "429" }],
  ["401", "bad key", { kind: "auth_error", retryable: false, code: "401" }],
  ["PERMISSION_DENIED", "no access", { kind: "auth_error", retryable: false }],
  ["404", "no such model", { kind: "model_not_found", retryable: false }],
  ["503", "overloaded", { kind: "transient_network", retryable: true, code: "503" }],
  ["DEADLINE_EXCEEDED", "model call timed out", { kind: "transient_network", retryable: true }],
  ["RESOURCE_EXHAUSTED", "quota", { kind: "rate_limited", retryable: true }],
  ["INVALID_ARGUMENT", "bad request", { kind: "config_error", retryable: false, code: "INVALID_ARGUMENT" }],
  ["418", "teapot", { kind: "unknown", retryable: false, code: "418" }],
];

let subject: ScriptedDaemon;
let daemon: Daemon;
let events: Collector;
beforeAll(async () => {
  subject = await startScripted(failures.map(([status, message]) => failWith(status, message)));
  ({ daemon, events } = subject);
});
afterAll(async () => {
  await subject.stop();
});

test("each provider failure is classified; a bare INVALID_ARGUMENT names both readings; turns go on", async () => {
  for (const [status, message, expected] of failures) {
    const from = events.frames.length;
    expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: `trigger ${status}` })).status).toBe(
      200,
    );
    const error = await events.waitFor((frame) => frame.event === "turn-error", 5000, from);
    expect(error.data).toMatchObject({ ...expected, message });
    const after = events.frames.slice(events.frames.indexOf(error)).map((frame) => frame.event);
    expect(after.slice(0, 3)).toEqual(["turn-error", "status-update", "usage-update"]);
    if (status === "INVALID_ARGUMENT") {
      expect(String(error.data.hint)).toContain("transient");
      expect(String(error.data.hint)).toContain("reproduces");
    }
    if (status === "401" || status === "404") expect(typeof error.data.hint).toBe("string");
  }
});
