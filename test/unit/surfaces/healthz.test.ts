/**
 * /healthz: 200 with the checks map when every check is ready, 503 with the same shape when one
 * is not, no identities or counts in the body, 405 on other methods.
 */
import { afterEach, expect, test } from "bun:test";
import type { CheckState } from "../../../src/surfaces/attach/attach-context.ts";
import { type InProcessApp, inProcessApp } from "../../support/attach-app.ts";

let subject: InProcessApp | undefined;
afterEach(async () => {
  await subject?.close();
});

async function health(checks: Record<string, CheckState>, method = "GET"): Promise<Response> {
  subject = await inProcessApp({ checks: async () => checks });
  return subject.app.handle(
    new Request("http://spar.test/healthz", { method, headers: { "content-type": "application/json" } }),
  );
}

test("ready checks answer 200", async () => {
  const response = await health({ session_db: "ready", turn_workers: "ready" });
  expect(response.status).toBe(200);
  expect(await response.json()).toEqual({ ok: true, checks: { session_db: "ready", turn_workers: "ready" } });
});

test("a failed or timed-out check answers 503 with the same shape", async () => {
  const failed = await health({ session_db: "failed", turn_workers: "ready" });
  expect(failed.status).toBe(503);
  expect(await failed.json()).toEqual({ ok: false, checks: { session_db: "failed", turn_workers: "ready" } });
  await subject?.close();
  const slow = await health({ session_db: "timeout" });
  expect(slow.status).toBe(503);
});

test("other methods answer 405", async () => {
  const response = await health({ session_db: "ready" }, "DELETE");
  expect(response.status).toBe(405);
  expect(response.headers.get("allow")).toContain("GET");
});
