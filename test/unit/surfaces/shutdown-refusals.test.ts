/**
 * Once shutdown begins, inject, wake and resume answer 503 with Retry-After while session
 * creation stays allowed (spec, Daemon lifecycle 2). Drives the attach app in-process through
 * app.handle over a real store and worker pool.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { PricingTable } from "../../../src/runtime/pricing-table.ts";
import { SessionHost } from "../../../src/runtime/session-host.ts";
import { WorkerPool } from "../../../src/runtime/worker-pool.ts";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { buildAttachApp } from "../../../src/surfaces/attach/attach-server.ts";
import { MetricsRegistry } from "../../../src/telemetry/metrics.ts";
import { tempDir } from "../../support/daemon.ts";

const quiet = { info: () => {}, warn: () => {}, error: () => {} };
let host: SessionHost;
let app: ReturnType<typeof buildAttachApp>;

beforeAll(async () => {
  const store = SqliteStore.open(join(tempDir(), "s.db"));
  host = new SessionHost({
    store,
    pool: new WorkerPool(1),
    pricing: new PricingTable(),
    logger: quiet,
    config: { app: "spar", agentName: "spar", multiSession: true, model: { provider: "echo", name: "echo" }, maxSteps: 5, idleTimeoutMs: 60_000 },
  });
  await host.start();
  app = buildAttachApp({
    host,
    daemon: { name: "spar", version: "test", description: "test", model: "echo", provider: "echo" },
    caller: () => ({ identity: "local", admin: false, source: "anonymous" }),
    checks: async () => ({ session_db: "ready" }),
    subscriberBuffer: { maxQueued: 64, lowWater: 16 },
    heartbeatMs: 15_000,
    metrics: new MetricsRegistry(),
    transport: { token: undefined, readonly: false },
    identitiesRequired: false,
  });
});
afterAll(async () => {
  await host.close();
});

const post = (path: string, body?: unknown) =>
  app.handle(new Request(`http://spar.test${path}`, { method: "POST", headers: { "content-type": "application/json" }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) }));

test("inject, wake and resume answer 503 with Retry-After during shutdown; POST /sessions still works", async () => {
  expect((await post("/sessions/default/inject", { message: "before" })).status).toBe(200);
  await host.beginShutdown();
  for (const [path, body] of [["/sessions/default/inject", { message: "late" }], ["/sessions/default/wake", { prompt: "late" }], ["/sessions/default/resume", undefined]] as const) {
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
