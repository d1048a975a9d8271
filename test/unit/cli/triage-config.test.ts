/**
 * The triage tools' config keys (D465-D467): `permissions.require_plan_artifact` and
 * `tools.wait_and_verify.{poll_allow, max_timeout_seconds, max_attempts}`, read into the permission
 * settings; bad values are startup errors naming the key; keys are asked for (never reported unread).
 */
import { expect, test } from "bun:test";
import { AGENT_FLAGS } from "../../../src/cli/agent-flags.ts";
import { buildAgentConfig } from "../../../src/cli/agent-config.ts";
import { parseFlags } from "../../../src/config/flag-parser.ts";
import { TrackedConfig } from "../../../src/config/config-file.ts";

function build(config: Record<string, unknown>) {
  const flags = parseFlags(AGENT_FLAGS, []);
  if (!flags.ok) throw new Error(flags.error);
  const tracked = new TrackedConfig(Object.entries(config));
  return { result: buildAgentConfig(flags.value.values, tracked, "/work", 2), tracked };
}

test("absent: no triage settings (neither tool offered)", () => {
  const { result } = build({});
  expect(result.ok && result.value.permissions.triage).toBeUndefined();
});

test("plan-first alone; wait_and_verify with its ceilings defaulting to 300 s and 40 attempts", () => {
  const plan = build({ "permissions.require_plan_artifact": true }).result;
  expect(plan.ok && plan.value.permissions.triage).toEqual({ requirePlan: true });
  const { result, tracked } = build({
    "permissions.require_plan_artifact": true,
    "tools.wait_and_verify.poll_allow": ["gke_get_k8s_resource", "gke_get_k8s_resource", "gke_list_k8s_events"],
  });
  expect(result.ok && result.value.permissions.triage).toEqual({
    requirePlan: true,
    waitAndVerify: {
      pollAllow: ["gke_get_k8s_resource", "gke_list_k8s_events"],
      maxTimeoutSeconds: 300,
      maxAttempts: 40,
    },
  });
  expect(tracked.unread()).toEqual([]);
});

test("bad values name the key", () => {
  const error = (config: Record<string, unknown>) => {
    const { result } = build(config);
    return result.ok ? "" : result.error;
  };
  expect(error({ "permissions.require_plan_artifact": "yes" })).toBe(
    "config key permissions.require_plan_artifact must be a boolean",
  );
  expect(error({ "tools.wait_and_verify.poll_allow": "a,b" })).toBe(
    "config key tools.wait_and_verify.poll_allow must be a list of tool names",
  );
  expect(error({ "tools.wait_and_verify.poll_allow": ["a"], "tools.wait_and_verify.max_attempts": 0 })).toBe(
    "config key tools.wait_and_verify.max_attempts must be a whole number from 1 to 1000",
  );
  expect(error({ "tools.wait_and_verify.poll_allow": ["a"], "tools.wait_and_verify.max_timeout_seconds": 1.5 })).toBe(
    "config key tools.wait_and_verify.max_timeout_seconds must be a whole number from 1 to 3600",
  );
  expect(error({ "tools.wait_and_verify.max_attempts": 10 })).toContain(
    "config key tools.wait_and_verify.poll_allow must name the tools",
  );
});
