/**
 * Once shutdown begins, inject, wake and resume answer 503 with Retry-After while session
 * creation stays allowed (spec, Daemon lifecycle 2).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type InProcessApp, inProcessApp } from "../../support/attach-app.ts";

let subject: InProcessApp;
beforeAll(async () => {
  subject = await inProcessApp();
});
afterAll(async () => {
  await subject.close();
});

const post = (path: string, body?: unknown) =>
  subject.app.handle(
    new Request(`http://spar.test${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
  );

test("inject, wake and resume answer 503 with Retry-After during shutdown; POST /sessions still works", async () => {
  expect((await post("/sessions/default/inject", { message: "before" })).status).toBe(200);
  await subject.host.beginShutdown();
  for (const [path, body] of [
    ["/sessions/default/inject", { message: "late" }],
    ["/sessions/default/wake", { prompt: "late" }],
    ["/sessions/default/resume", undefined],
  ] as const) {
    const response = await post(path, body);
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("5");
    expect(((await response.json()) as { error: string }).error).toContain("shutting down");
  }
  const created = await post("/sessions", { sessionID: "during-shutdown" });
  expect(created.status).toBe(201);
  // No Host header was sent in-process: the url is the bare path (spec, POST /sessions).
  expect(((await created.json()) as { url: string }).url).toBe("/sessions/spar/during-shutdown");
});
