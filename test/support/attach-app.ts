/**
 * An in-process attach app over a real store and worker pool, for surface tests that call
 * `app.handle(new Request(...))` without opening a port. Overrides replace context fields.
 */
import { join } from "node:path";
import { AutoContinuer } from "../../src/runtime/auto-continuer.ts";
import { PricingTable } from "../../src/runtime/pricing-table.ts";
import { SessionHost } from "../../src/runtime/session-host.ts";
import { SessionService } from "../../src/runtime/session-service.ts";
import { WorkerPool } from "../../src/runtime/worker-pool.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import type { AttachContext } from "../../src/surfaces/attach/attach-context.ts";
import { buildAttachApp } from "../../src/surfaces/attach/attach-server.ts";
import { StreamAdmission } from "../../src/surfaces/http/stream-admission.ts";
import { MetricsRegistry } from "../../src/telemetry/metrics.ts";
import { tempDir } from "./daemon.ts";

const quiet = { info: () => {}, warn: () => {}, error: () => {} };

export interface InProcessApp {
  host: SessionHost;
  app: ReturnType<typeof buildAttachApp>;
  close(): Promise<void>;
}

/** A started session host over a real store (a temp dir) and one turn worker, echo model. */
export async function startTestHost(): Promise<SessionHost> {
  const store = SqliteStore.open(join(tempDir(), "s.db"));
  const host = new SessionHost({
    store,
    pool: new WorkerPool(1),
    pricing: new PricingTable(),
    logger: quiet,
    autoContinue: new AutoContinuer(
      {
        enabled: false,
        freshnessMs: 60_000,
        backoffMs: 0,
        maxPerBoot: 0,
        maxPerSession: 0,
        crashLoopBoots: 3,
        crashLoopWindowMs: 60_000,
      },
      store,
      () => new Date(),
      () => {},
    ),
    config: {
      permissions: { mode: "ask", approvalTimeoutMs: 60_000, allow: [], deny: [] },
      guardrails: { watchdog: "enforce", maxTurnUsd: 0, maxSessionUsd: 0 },
      app: "spar",
      agentName: "spar",
      multiSession: true,
      model: { provider: "echo", name: "echo" },
      maxSteps: 5,
      idleTimeoutMs: 60_000,
    },
  });
  await host.start();
  return host;
}

/** The attach context of a test listener over `host`; overrides replace its fields. */
export function testAttachContext(host: SessionHost, overrides: Partial<AttachContext> = {}): AttachContext {
  return {
    sessions: new SessionService(host),
    daemon: { name: "spar", version: "test", description: "test", model: "echo", provider: "echo", costCeiling: false },
    caller: () => ({ identity: "local", admin: false, source: "anonymous" }),
    checks: async () => ({ session_db: "ready" }),
    subscriberBuffer: { maxQueued: 64, lowWater: 16 },
    heartbeatMs: 15_000,
    metrics: new MetricsRegistry(),
    transport: { token: undefined, readonly: false },
    streams: new StreamAdmission({ maxStreams: 1000, maxPerCaller: 1000, adminReserve: 0 }),
    identitiesRequired: false,
    ...overrides,
  };
}

export async function inProcessApp(overrides: Partial<AttachContext> = {}): Promise<InProcessApp> {
  const host = await startTestHost();
  const app = buildAttachApp(testAttachContext(host, overrides));
  return { host, app, close: () => host.close() };
}
