/**
 * A specialist session evicted and loaded again gets a new write gate on its new journal and
 * conversation; the same loaded session keeps its gate (its answers stay serialized).
 */
import { expect, test } from "bun:test";
import type { EventLog } from "../../../../src/core/event-log.ts";
import type { ToolRunner } from "../../../../src/core/tool-catalog.ts";
import type { ExecutorSession } from "../../../../src/runtime/executor.ts";
import type { SessionService } from "../../../../src/runtime/session-service.ts";
import { SvcRuntime } from "../../../../src/svc/dispatch/svc-runtime.ts";
import { loadWorkload } from "../../../../src/svc/workload/load-workload.ts";

function loadedSession(): ExecutorSession {
  // Only the parts the gate keeps are read when it is built.
  return {
    key: { app: "svc.helper", id: "incident-1" },
    journal: {
      header: () => ({ id: "", ts: "", invocationId: "", author: "" }),
      append: async () => [],
      frame: () => {},
    },
    conversation: { history: [] },
    tools: {},
    context: {},
    guards: {},
  } as unknown as ExecutorSession;
}

test("gateFor: the same loaded session keeps its gate; a session loaded again gets a new one", () => {
  const loaded = loadWorkload({
    value: `${import.meta.dir}/../../../fixtures/workloads/hello`,
    cwd: process.cwd(),
    env: {},
    wireToolServers: false,
  });
  if (!loaded.ok) throw new Error(loaded.error);
  const runtime = SvcRuntime.forWorkload({
    workload: loaded.value.workload,
    app: "svc",
    onMutation: "require_approval",
    changeSetTtlMs: 600_000,
    audit: () => {},
    logError: () => {},
  });
  runtime.bind({
    sessions: {} as SessionService,
    log: {} as EventLog,
    runner: {} as ToolRunner,
    mcp: undefined,
  });
  const profile = runtime.roster.specialist("helper");
  if (profile === undefined) throw new Error("no helper");
  const first = loadedSession();
  const gate = runtime.gates.gateFor(first, profile);
  expect(runtime.gates.gateFor(first, profile)).toBe(gate);
  const reloaded = loadedSession();
  const again = runtime.gates.gateFor(reloaded, profile);
  expect(again).not.toBe(gate);
  expect(runtime.gates.gateFor(reloaded, profile)).toBe(again);
});
