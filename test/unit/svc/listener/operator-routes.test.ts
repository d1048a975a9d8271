/**
 * svc's main listener's operator routes through its app's own `handle`: POST /abort (strict body,
 * default reason, reserved ids, 202/404/409), POST /sessions/{id}/guardrails/reset (the attach
 * surface's body and answer), and the draining guard (every write 503 with Retry-After, reads
 * served). Every refusal is a JSON error and reaches nothing behind the listener.
 */
import { describe, expect, test } from "bun:test";
import { SparError } from "../../../../src/core/errors.ts";
import { parseAllowedHosts } from "../../../../src/surfaces/http/host-allowlist.ts";
import type { MainListenerPort } from "../../../../src/svc/listener/listener-port.ts";
import { INJECT_CALLER, mainListenerApp } from "../../../../src/svc/listener/main-listener.ts";
import { RecordingControls } from "./recording-controls.ts";

class QuietPort implements MainListenerPort {
  injects = 0;
  async inject() {
    this.injects++;
    return { promptId: "p", state: "idle" as const, pending: [] };
  }
  async resume() {
    return { outcome: "apply", state: "idle" as const, pending: [] };
  }
  async ackEffects() {
    return { acknowledged: 0, state: "idle" as const, pending: [] };
  }
  async pause(): Promise<never> {
    throw new Error("not reached");
  }
  async resumeByToken(): Promise<never> {
    throw new Error("not reached");
  }
  async extendToken(): Promise<never> {
    throw new Error("not reached");
  }
  metrics(): string {
    return "svc_up 1\n";
  }
}

function setup(token?: string) {
  const controls = new RecordingControls();
  const port = new QuietPort();
  const allowed = parseAllowedHosts([], "--listen");
  if (!allowed.ok) throw new Error(allowed.error);
  const app = mainListenerApp({
    port,
    controls,
    token,
    ...(token === undefined ? { allowedHosts: allowed.value } : {}),
  });
  const send = (path: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}) =>
    app.handle(
      new Request(`http://127.0.0.1:7777${path}`, {
        method: init.method ?? "POST",
        headers: { host: "127.0.0.1:7777", "content-type": "application/json", ...init.headers },
        ...(init.body === undefined ? {} : { body: init.body }),
      }),
    );
  return { controls, port, send };
}

async function errorOf(response: Response, status: number): Promise<string> {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/json");
  return ((await response.json()) as { error: string }).error;
}

describe("POST /abort", () => {
  test("aborts the named session with the caller and answers 202 {status: aborted, session_id}", async () => {
    const { controls, send } = setup("s3cret");
    const response = await send("/abort", {
      body: JSON.stringify({ session_id: "incident-u1", reason: "bad rollout" }),
      headers: { authorization: "Bearer s3cret" },
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ status: "aborted", session_id: "incident-u1" });
    expect(controls.aborts).toEqual([{ sessionId: "incident-u1", reason: "bad rollout", caller: INJECT_CALLER }]);
  });

  test("without a reason (or a blank one) the reason is `operator abort`", async () => {
    const { controls, send } = setup();
    expect((await send("/abort", { body: '{"session_id":"s1"}' })).status).toBe(202);
    expect((await send("/abort", { body: '{"session_id":"s2","reason":"  "}' })).status).toBe(202);
    expect(controls.aborts.map((abort) => abort.reason)).toEqual(["operator abort", "operator abort"]);
  });

  test("an unknown field, a missing or non-string session_id and a non-object are refused 400, reaching nothing", async () => {
    const { controls, send } = setup();
    const cases: Array<[string, string]> = [
      ['{"session_id":"s","approver":"admin"}', 'field "approver": unknown field'],
      ['{"reason":"x"}', 'field "session_id": session_id is required'],
      ['{"session_id":7}', 'field "session_id": session_id is required'],
      ['{"session_id":"s","reason":1}', 'field "reason": reason must be a string'],
      ["[]", "must be a JSON object, got an array"],
      ["", "request body is empty"],
    ];
    for (const [body, message] of cases) expect(await errorOf(await send("/abort", { body }), 400)).toContain(message);
    expect(controls.aborts).toEqual([]);
  });

  test("a reserved :mast-ops id and an id no session can carry are refused 400", async () => {
    const { controls, send } = setup();
    expect(await errorOf(await send("/abort", { body: '{"session_id":"incident-x:mast-ops"}' }), 400)).toContain(
      'reserved session ID "incident-x:mast-ops"',
    );
    expect(await errorOf(await send("/abort", { body: '{"session_id":"../etc"}' }), 400)).toContain(
      'session ID "../etc"',
    );
    expect(controls.aborts).toEqual([]);
  });

  test("the daemon's refusals keep their status: 404 unknown, 409 aborted already", async () => {
    const { controls, send } = setup();
    controls.failWith = new SparError("not_found", "session not found: nope");
    expect(await errorOf(await send("/abort", { body: '{"session_id":"nope"}' }), 404)).toBe("session not found: nope");
    controls.failWith = new SparError("conflict", 'session "s": session already aborted');
    expect(await errorOf(await send("/abort", { body: '{"session_id":"s"}' }), 409)).toContain("already aborted");
  });
});

describe("POST /sessions/{id}/guardrails/reset", () => {
  test("resets with the attach surface's body and answers its 200 body", async () => {
    const { controls, send } = setup();
    const response = await send("/sessions/incident-u1/guardrails/reset", {
      body: '{"guardrail":"cost_ceiling","additional_budget_usd":2}',
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ reset: ["watchdog"], budget_added_usd: 0, message: "reset" });
    expect(controls.resets[0]).toMatchObject({
      sessionId: "incident-u1",
      request: { guardrail: "cost_ceiling", additionalBudgetUsd: 2 },
    });
    expect((await send("/sessions/incident-u1/guardrails/reset")).status).toBe(200);
    expect(controls.resets[1]?.request).toEqual({});
  });

  test("a bad guardrail or budget is 400; a reserved id is 400; nothing reaches the daemon", async () => {
    const { controls, send } = setup();
    expect(await errorOf(await send("/sessions/s/guardrails/reset", { body: '{"guardrail":"bogus"}' }), 400)).toContain(
      "guardrail must be one of",
    );
    expect(
      await errorOf(await send("/sessions/s/guardrails/reset", { body: '{"additional_budget_usd":-1}' }), 400),
    ).toContain("must not be negative");
    expect(await errorOf(await send("/sessions/x:mast-ops/guardrails/reset"), 400)).toContain("reserved session ID");
    expect(controls.resets).toEqual([]);
  });

  test("409 with a reset-shaped body when it would trip again; 404 for no such session", async () => {
    const { controls, send } = setup();
    controls.failWith = new SparError("conflict", "would trip again", { reset: [], budget_added_usd: 0 });
    const conflict = await send("/sessions/s/guardrails/reset");
    expect(conflict.status).toBe(409);
    expect(await conflict.json()).toMatchObject({ error: "would trip again", reset: [], budget_added_usd: 0 });
    controls.failWith = new SparError("not_found", "session not found: s");
    expect(await errorOf(await send("/sessions/s/guardrails/reset"), 404)).toBe("session not found: s");
  });
});

describe("POST /stop", () => {
  test("starts the drain with the trimmed reason, --pause-sessions and the caller; answers 202 {drain_bound}", async () => {
    const { controls, send } = setup("s3cret");
    const response = await send("/stop", {
      body: '{"reason":"  deploy 42 ","pause_sessions":true}',
      headers: { authorization: "Bearer s3cret" },
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ drain_bound: "30s" });
    expect(controls.stops).toEqual([{ reason: "deploy 42", pauseSessions: true, caller: INJECT_CALLER }]);
  });

  test("an empty body is allowed: no reason, sessions not paused", async () => {
    const { controls, send } = setup();
    expect((await send("/stop")).status).toBe(202);
    expect((await send("/stop", { body: "{}" })).status).toBe(202);
    expect(controls.stops.map(({ reason, pauseSessions }) => ({ reason, pauseSessions }))).toEqual([
      { reason: undefined, pauseSessions: false },
      { reason: undefined, pauseSessions: false },
    ]);
  });

  test("an unknown field, a non-boolean pause_sessions or a non-string reason is a 400 that stops nothing", async () => {
    const { controls, send } = setup();
    expect(await errorOf(await send("/stop", { body: '{"force":true}' }), 400)).toContain("unknown field");
    expect(await errorOf(await send("/stop", { body: '{"pause_sessions":"yes"}' }), 400)).toContain(
      "pause_sessions must be a boolean",
    );
    expect(await errorOf(await send("/stop", { body: '{"reason":7}' }), 400)).toContain("reason must be a string");
    expect(controls.stops).toEqual([]);
  });
});

describe("draining", () => {
  test("every write is 503 with Retry-After and a JSON error, reaching nothing; /metrics and /healthz are served", async () => {
    const { controls, port, send } = setup();
    controls.draining = new SparError("shutting_down", "daemon is shutting down; retry against its successor");
    for (const [path, body] of [
      ["/inject", '{"uid":"u"}'],
      ["/abort", '{"session_id":"s"}'],
      ["/sessions/s/guardrails/reset", "{}"],
      ["/resume", "{}"],
      ["/stop", "{}"],
    ] as const) {
      const response = await send(path, { body });
      expect(await errorOf(response, 503)).toBe("daemon is shutting down; retry against its successor");
      expect(response.headers.get("retry-after")).toBe("5");
    }
    expect(port.injects).toBe(0);
    expect(controls.aborts).toEqual([]);
    expect(controls.resets).toEqual([]);
    expect(controls.stops).toEqual([]);
    expect((await send("/metrics", { method: "GET" })).status).toBe(200);
    expect((await send("/healthz", { method: "GET" })).status).toBe(200);
  });

  test("the shared guards still come first: without the token a draining listener answers 401", async () => {
    const { controls, send } = setup("s3cret");
    controls.draining = new SparError("shutting_down", "daemon is shutting down");
    expect(await errorOf(await send("/inject", { body: '{"uid":"u"}' }), 401)).toBe(
      "missing or wrong inject token: send the value of SVC_INJECT_TOKEN as Authorization: Bearer <token>",
    );
  });
});
