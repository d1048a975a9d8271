/**
 * The runtime core alone, with no listener (what `spar svc` starts): the echo model on a temp
 * store, a message injected through the SessionService runs a turn to completion, the readiness
 * checks and the runtime's metrics answer, and close() releases the store for the next daemon.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { resolveAutoContinue, resolveGuardrailConfig } from "../../../src/cli/guardrail-flags.ts";
import { resolveKnowledgeSettings } from "../../../src/cli/knowledge-flags.ts";
import { resolvePricingSettings } from "../../../src/cli/pricing-flags.ts";
import { type RuntimeCore, type RuntimeCoreSettings, startRuntimeCore } from "../../../src/daemon/runtime-core.ts";
import { resolveToolsSettings } from "../../../src/cli/tools-flags.ts";
import type { Result } from "../../../src/core/result.ts";
import { DEFAULT_SESSION_ID, LOCAL_CALLER } from "../../../src/core/session-key.ts";
import type { Publication } from "../../../src/core/events.ts";
import { tempDir, waitFor } from "../../support/daemon.ts";

const none = new Map<string, never>();
const caller = { identity: LOCAL_CALLER, admin: false };
const target = { app: undefined, sid: DEFAULT_SESSION_ID };
const running: RuntimeCore[] = [];

function value<T>(result: Result<T>): T {
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

/** Defaults from the shared resolvers, as a daemon without those flags would read them. */
function settings(dir: string): RuntimeCoreSettings {
  return {
    store: { path: join(dir, "state", "sessions.db"), maxMb: 0 },
    workers: 1,
    workerLivenessMs: 30_000,
    tools: value(resolveToolsSettings(none, none, dir)),
    mcp: undefined,
    knowledge: value(resolveKnowledgeSettings(none, none, dir)),
    permissions: { mode: "ask", approvalTimeoutMs: 60_000, allow: [], deny: [] },
    guardrails: value(resolveGuardrailConfig(none, none)),
    model: { provider: "echo", name: "echo" },
    maxSteps: 5,
    idleTimeoutMs: 60_000,
    inbox: { maxMessages: 100, maxBytes: 1_000_000 },
    appName: "spar",
    agentName: "spar",
    multiSession: false,
    autoContinue: value(resolveAutoContinue(none, none)),
    pricing: value(resolvePricingSettings(none, none, dir)),
    hiddenEnv: [],
  };
}

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

async function start(dir: string): Promise<RuntimeCore> {
  const core = await startRuntimeCore(settings(dir), quiet);
  running.push(core);
  return core;
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((core) => core.close()));
});

/** Every publication of the default session's feed, from the start of its log. */
async function collect(core: RuntimeCore): Promise<Publication[]> {
  const seen: Publication[] = [];
  const session = await core.sessions.subscribe(target, caller);
  session.attach(
    {
      deliver: (publication) => {
        seen.push(publication);
        return true;
      },
      whenWritable: async () => {},
      replayBatch: 256,
      bytesDelivered: 0,
      closed: false,
      close: () => {},
    },
    0,
  );
  return seen;
}

describe("the runtime core without a listener", () => {
  test("an injected message runs a turn to completion on the echo model, and the core reports it", async () => {
    const core = await start(tempDir());
    expect(await core.checks()).toEqual({ session_db: "ready", turn_workers: "ready", wake_loops: "ready" });
    const seen = await collect(core);
    await core.sessions.inject(target, caller, "hello from svc", { wake: true });
    await waitFor(
      () => (core.metrics.render().includes('spar_turns_total{outcome="completed"} 1') ? true : undefined),
      10_000,
      "the turn to complete",
    );
    expect(JSON.stringify(seen)).toContain("hello from svc");
    expect(core.metrics.render()).toContain("spar_sessions_live 1");
  });

  test("close() stops the workers and releases the store: a second core opens it and finds the session", async () => {
    const dir = tempDir();
    const first = await start(dir);
    await first.sessions.inject(target, caller, "kept", { wake: false });
    await first.beginShutdown();
    await first.close();
    await first.close();
    const second = await start(dir);
    expect(await second.store.getSession({ app: "spar", id: DEFAULT_SESSION_ID })).toBeDefined();
  });
});
