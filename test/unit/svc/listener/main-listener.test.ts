/**
 * svc's main listener through its app's own `handle`: the inject envelope becomes one call on the
 * daemon with the session and the message the spec names, answered 202 once the turn has ended;
 * every refusal is a JSON error and reaches nothing behind the listener.
 */
import { describe, expect, test } from "bun:test";
import { SparError } from "../../../../src/core/errors.ts";
import type { Caller } from "../../../../src/surfaces/http/caller-auth.ts";
import { parseAllowedHosts } from "../../../../src/surfaces/http/host-allowlist.ts";
import type { AckEffectsRequest } from "../../../../src/svc/listener/listener-port.ts";
import type { InjectRequest, MainListenerPort, ResumeRequest } from "../../../../src/svc/listener/listener-port.ts";
import { INJECT_CALLER, mainListenerApp } from "../../../../src/svc/listener/main-listener.ts";
import { RecordingControls } from "./recording-controls.ts";
import type { PauseRequest, TokenResumeRequest } from "../../../../src/svc/pause/session-pauses.ts";

/** A daemon behind the listener that records what reached it and answers as told. */
class RecordingPort implements MainListenerPort {
  readonly injects: InjectRequest[] = [];
  readonly resumes: ResumeRequest[] = [];
  readonly acks: AckEffectsRequest[] = [];
  async ackEffects(request: AckEffectsRequest) {
    this.acks.push(request);
    return { acknowledged: 1, state: "idle" as const, pending: [] };
  }
  failWith: SparError | undefined;
  async resume(request: ResumeRequest) {
    if (this.failWith) throw this.failWith;
    this.resumes.push(request);
    return { outcome: "apply", state: "idle" as const, pending: [] };
  }
  async inject(request: InjectRequest) {
    if (this.failWith) throw this.failWith;
    this.injects.push(request);
    return { promptId: `p-${this.injects.length}`, state: "idle" as const, pending: [] };
  }
  readonly pauses: PauseRequest[] = [];
  async pause(request: PauseRequest) {
    this.pauses.push(request);
    return {
      token: "mrt_AAAAAAAAAAAAAAAAAAAAAA",
      session_id: request.sessionId,
      reason: request.reason,
      expires_at: "2026-01-08T00:00:00.000Z",
      replaced: false,
    };
  }
  readonly tokenResumes: TokenResumeRequest[] = [];
  async resumeByToken(request: TokenResumeRequest) {
    this.tokenResumes.push(request);
    return { session_id: "incident-t", replay: false };
  }
  readonly extends: Array<{ token: string; ttlMs: number }> = [];
  async extendToken(token: string, ttlMs: number) {
    this.extends.push({ token, ttlMs });
    return { session_id: "incident-t", expires_at: "2026-01-03T00:00:00.000Z" };
  }
  metrics(): string {
    return "svc_up 1\n";
  }
}

function loopbackOnly() {
  const parsed = parseAllowedHosts([], "--listen");
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
}

function setup(token?: string) {
  const port = new RecordingPort();
  const app = mainListenerApp({
    port,
    controls: new RecordingControls(),
    token,
    ...(token === undefined ? { allowedHosts: loopbackOnly() } : {}),
  });
  const send = (path: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}) =>
    app.handle(
      new Request(`http://127.0.0.1:7777${path}`, {
        method: init.method ?? "POST",
        headers: { host: "127.0.0.1:7777", "content-type": "application/json", ...init.headers },
        ...(init.body === undefined ? {} : { body: init.body }),
      }),
    );
  return { port, send };
}

async function errorOf(response: Response): Promise<string> {
  expect(response.headers.get("content-type")).toContain("application/json");
  return ((await response.json()) as { error: string }).error;
}

describe("POST /inject", () => {
  test("an envelope runs on incident-<uid> with the INJECT message (field order, zero values) and answers 202", async () => {
    const { port, send } = setup();
    const response = await send("/inject", { body: JSON.stringify({ uid: "u1", reason: "Ping", kind: "Pod" }) });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({
      status: "accepted",
      session_id: "incident-u1",
      prompt_id: "p-1",
      state: "idle",
      pending: [],
    });
    expect(port.injects).toHaveLength(1);
    expect(port.injects[0]?.sessionId).toBe("incident-u1");
    expect(port.injects[0]?.message).toBe(
      'INJECT {"kind":"Pod","reason":"Ping","namespace":"","kind_of_object":"","name":"","uid":"u1","message":"","count":0,' +
        '"first_seen":"0001-01-01T00:00:00Z","last_seen":"0001-01-01T00:00:00Z","cluster":"","context":{}}',
    );
  });

  test("a container is carried when given; an empty uid goes to gke-triage-default", async () => {
    const { port, send } = setup();
    expect((await send("/inject", { body: JSON.stringify({ container: "app", count: 3 }) })).status).toBe(202);
    expect(port.injects[0]?.sessionId).toBe("gke-triage-default");
    expect(port.injects[0]?.message).toContain('"name":"","container":"app","uid":""');
    expect(port.injects[0]?.message).toContain('"count":3');
  });

  test("a uid deriving a reserved :mast-ops id is refused 400 and reaches nothing", async () => {
    const { port, send } = setup();
    const response = await send("/inject", { body: JSON.stringify({ uid: "x:mast-ops" }) });
    expect(response.status).toBe(400);
    expect(await errorOf(response)).toContain('derives reserved session ID "incident-x:mast-ops"');
    expect(port.injects).toEqual([]);
  });

  test("a uid no session id can carry (a slash) is refused 400", async () => {
    const { port, send } = setup();
    const response = await send("/inject", { body: JSON.stringify({ uid: "a/b" }) });
    expect(response.status).toBe(400);
    expect(await errorOf(response)).toContain('derives session ID "incident-a/b"');
    expect(port.injects).toEqual([]);
  });

  test("unknown fields, wrong types and non-objects are refused 400 naming the field", async () => {
    const { port, send } = setup();
    const cases: Array<[string, string]> = [
      ['{"uid":"u","bogus":1}', 'field "bogus": unknown field'],
      ['{"count":1.5}', 'field "count": count must be a whole number'],
      ['{"context":"x"}', 'field "context"'],
      ['"uid"', "must be a JSON object of the incident envelope"],
      ["[]", "must be a JSON object, got an array"],
      ["{", "malformed JSON"],
    ];
    for (const [body, message] of cases) {
      const response = await send("/inject", { body });
      expect(response.status).toBe(400);
      expect(await errorOf(response)).toContain(message);
    }
    expect(port.injects).toEqual([]);
  });

  test("the daemon's refusals keep their status: 409 for a session that refuses turns, 503 and Retry-After while draining", async () => {
    const { port, send } = setup();
    port.failWith = new SparError("conflict", 'session "incident-u" is aborted');
    const refused = await send("/inject", { body: '{"uid":"u"}' });
    expect(refused.status).toBe(409);
    expect(await errorOf(refused)).toBe('session "incident-u" is aborted');
    port.failWith = new SparError("shutting_down", "daemon is shutting down");
    const draining = await send("/inject", { body: '{"uid":"u"}' });
    expect(draining.status).toBe(503);
    expect(draining.headers.get("retry-after")).not.toBeNull();
  });

  test("a write without Content-Type: application/json is refused 415", async () => {
    const { port, send } = setup();
    const response = await send("/inject", { body: '{"uid":"u"}', headers: { "content-type": "text/plain" } });
    expect(response.status).toBe(415);
    expect(port.injects).toEqual([]);
  });
});

describe("authentication", () => {
  test("with SVC_INJECT_TOKEN a missing or wrong bearer is 401 (realm inject); the right one is the inject caller", async () => {
    const { port, send } = setup("s3cret");
    for (const headers of [{}, { authorization: "Bearer wrong" }]) {
      const response = await send("/inject", { body: '{"uid":"u"}', headers });
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toBe('Bearer realm="inject"');
      expect(await errorOf(response)).toBe(
        "missing or wrong inject token: send the value of SVC_INJECT_TOKEN as Authorization: Bearer <token>",
      );
    }
    expect(port.injects).toEqual([]);
    const accepted = await send("/inject", { body: '{"uid":"u"}', headers: { authorization: "Bearer s3cret" } });
    expect(accepted.status).toBe(202);
    expect(port.injects[0]?.caller).toEqual(INJECT_CALLER as Caller);
  });

  test("with a token, /healthz stays public and /metrics needs the token", async () => {
    const { send } = setup("s3cret");
    expect((await send("/healthz", { method: "GET" })).status).toBe(200);
    expect((await send("/metrics", { method: "GET" })).status).toBe(401);
    const metrics = await send("/metrics", { method: "GET", headers: { authorization: "Bearer s3cret" } });
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toBe("svc_up 1\n");
  });

  test("without a token only loopback Host names are served (DNS rebinding): another Host is refused", async () => {
    const { port, send } = setup();
    const response = await send("/inject", { body: '{"uid":"u"}', headers: { host: "attacker.example:7777" } });
    expect(response.status).toBe(421);
    expect(await errorOf(response)).toContain("attacker.example");
    expect(port.injects).toEqual([]);
  });
});

describe("routing", () => {
  test("a known path with another method is 405 with Allow; an unknown path is a JSON 404", async () => {
    const { send } = setup();
    const wrongMethod = await send("/inject", { method: "GET" });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("POST");
    const unknown = await send("/nope", { method: "GET" });
    expect(unknown.status).toBe(404);
    expect(await errorOf(unknown)).toBe("no such endpoint: GET /nope");
  });
});

describe("POST /resume", () => {
  const body = { session_id: "incident-u1", interrupt_id: "gate-1", response: { verdict: "approve" } };

  test("a question's answer reaches the daemon with the authenticated caller, answered 202 with the outcome", async () => {
    const { port, send } = setup("s3cret");
    const response = await send("/resume", { body: JSON.stringify(body), headers: { authorization: "Bearer s3cret" } });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({
      status: "resumed",
      session_id: "incident-u1",
      interrupt_id: "gate-1",
      outcome: "apply",
      state: "idle",
      pending: [],
    });
    expect(port.resumes).toEqual([
      { sessionId: "incident-u1", interruptId: "gate-1", response: { verdict: "approve" }, caller: INJECT_CALLER },
    ]);
  });

  test("a reserved session id, a missing key and an unknown key are 400 and reach nothing", async () => {
    const { port, send } = setup();
    const reserved = await send("/resume", { body: JSON.stringify({ ...body, session_id: "incident-x:mast-ops" }) });
    expect(reserved.status).toBe(400);
    expect(await errorOf(reserved)).toContain("reserved");
    const missing = await send("/resume", { body: JSON.stringify({ session_id: "incident-u1", response: {} }) });
    expect(missing.status).toBe(400);
    expect(await errorOf(missing)).toContain("interrupt_id");
    const unknown = await send("/resume", { body: JSON.stringify({ ...body, approver: "mallory" }) });
    expect(unknown.status).toBe(400);
    expect(port.resumes).toEqual([]);
  });

  test("the daemon's refusals keep their status and details: 409 for a question answered before", async () => {
    const { port, send } = setup();
    port.failWith = new SparError("conflict", "interrupt gate-1 was already answered", { outcome: "apply" });
    const response = await send("/resume", { body: JSON.stringify(body) });
    expect(response.status).toBe(409);
    expect(await response.json()).toEqual({ error: "interrupt gate-1 was already answered", outcome: "apply" });
  });
});

describe("POST /ack-effects", () => {
  test("the caller's acknowledgement reaches the daemon with the default reason, answered 202 with how many", async () => {
    const { port, send } = setup("s3cret");
    const response = await send("/ack-effects", {
      body: JSON.stringify({ session_id: "incident-u1" }),
      headers: { authorization: "Bearer s3cret" },
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({
      status: "acknowledged",
      session_id: "incident-u1",
      acknowledged: 1,
      state: "idle",
      pending: [],
    });
    expect(port.acks).toEqual([{ sessionId: "incident-u1", reason: "operator ack", caller: INJECT_CALLER }]);
  });

  test("a reserved id, a missing session_id and an unknown field are 400 and reach nothing", async () => {
    const { port, send } = setup();
    for (const body of [
      { session_id: "incident-x:mast-ops" },
      { reason: "r" },
      { session_id: "incident-u1", by: "x" },
    ]) {
      const response = await send("/ack-effects", { body: JSON.stringify(body) });
      expect(response.status).toBe(400);
    }
    expect(port.acks).toEqual([]);
  });
});

describe("POST /resume with a token", () => {
  test("a token resume reaches the daemon with ack_effects, answered 202 with the session and replay flag", async () => {
    const { port, send } = setup("s3cret");
    const response = await send("/resume", {
      body: JSON.stringify({ token: "mrt_AAAAAAAAAAAAAAAAAAAAAA", ack_effects: true }),
      headers: { authorization: "Bearer s3cret" },
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ status: "resumed", session_id: "incident-t", replay: false });
    expect(port.tokenResumes).toEqual([
      { token: "mrt_AAAAAAAAAAAAAAAAAAAAAA", ackEffects: true, caller: INJECT_CALLER },
    ]);
  });

  test("a token with session keying, neither keying, and a non-boolean ack_effects are 400 and reach nothing", async () => {
    const { port, send } = setup();
    const both = await send("/resume", { body: JSON.stringify({ token: "mrt_x", session_id: "incident-a" }) });
    expect(both.status).toBe(400);
    expect(await errorOf(both)).toContain("mutually exclusive");
    const neither = await send("/resume", { body: JSON.stringify({ response: {} }) });
    expect(neither.status).toBe(400);
    expect(await errorOf(neither)).toContain("either token, or session_id and interrupt_id");
    const ack = await send("/resume", { body: JSON.stringify({ token: "mrt_x", ack_effects: "yes" }) });
    expect(ack.status).toBe(400);
    expect(port.tokenResumes).toEqual([]);
    expect(port.resumes).toEqual([]);
  });

  test("ack_effects on a question's resume reaches the daemon", async () => {
    const { port, send } = setup();
    const response = await send("/resume", {
      body: JSON.stringify({ session_id: "incident-u1", interrupt_id: "gate-1", response: {}, ack_effects: true }),
    });
    expect(response.status).toBe(202);
    expect(port.resumes[0]?.ackEffects).toBe(true);
  });
});

describe("POST /pause and /extend-token", () => {
  test("a pause reaches the daemon with its fields parsed (ttl in ms, resume_at in UTC), answered 200 with the token", async () => {
    const { port, send } = setup();
    const response = await send("/pause", {
      body: JSON.stringify({
        session_id: "incident-p1",
        reason: "maintenance_window",
        message: "node pool upgrade",
        metadata: { ticket: "OPS-1" },
        resume_at: "2026-08-16T11:05:00+02:00",
        interrupt: true,
        ttl: "48h",
      }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ token: "mrt_AAAAAAAAAAAAAAAAAAAAAA", session_id: "incident-p1" });
    expect(port.pauses).toEqual([
      {
        sessionId: "incident-p1",
        reason: "maintenance_window",
        message: "node pool upgrade",
        metadata: { ticket: "OPS-1" },
        resumeAt: "2026-08-16T09:05:00.000Z",
        interrupt: true,
        ttlMs: 48 * 3_600_000,
        caller: expect.objectContaining({ identity: "local" }),
      },
    ]);
  });

  test("a bad reason, a missing reason, a bad ttl, a bad resume_at, a reserved id and an unknown field are 400", async () => {
    const { port, send } = setup();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ session_id: "incident-p1", reason: "nap" }, "reason must be one of budget_exhaustion"],
      [{ session_id: "incident-p1" }, "reason"],
      [{ session_id: "incident-p1", reason: "operator", ttl: "2 days" }, "ttl: invalid duration"],
      [{ session_id: "incident-p1", reason: "operator", resume_at: "tomorrow" }, "resume_at"],
      [{ session_id: "incident-p1:mast-ops", reason: "operator" }, "reserved"],
      [{ session_id: "incident-p1", reason: "operator", until: "x" }, "until"],
    ];
    for (const [body, expected] of cases) {
      const response = await send("/pause", { body: JSON.stringify(body) });
      expect(response.status).toBe(400);
      expect(await errorOf(response)).toContain(expected);
    }
    expect(port.pauses).toEqual([]);
  });

  test("extend-token reaches the daemon with the ttl in ms; a missing ttl is 400", async () => {
    const { port, send } = setup();
    const response = await send("/extend-token", { body: JSON.stringify({ token: "mrt_x", ttl: "2h" }) });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      token: "mrt_x",
      session_id: "incident-t",
      expires_at: "2026-01-03T00:00:00.000Z",
    });
    expect(port.extends).toEqual([{ token: "mrt_x", ttlMs: 7_200_000 }]);
    const missing = await send("/extend-token", { body: JSON.stringify({ token: "mrt_x" }) });
    expect(missing.status).toBe(400);
    expect(await errorOf(missing)).toContain("ttl");
  });
});
