/**
 * The workload of an empty `--workload` (docs/svc-workloads.md#modes): one agent,
 * `trivial_coordinator`, with no specialists, no tools, no bundle; nothing can mutate, so the gate
 * never parks. The caller logs the warning.
 */
import type { BundleFile } from "./bundle-file.ts";

export const TRIVIAL_NAME = "trivial";

export const TRIVIAL_WARNING =
  "no --workload given: running the trivial single agent trivial_coordinator (no tools, no write gate, no bundle)";

export function trivialBundle(): BundleFile {
  return {
    name: TRIVIAL_NAME,
    description: "",
    mode: "single_session",
    roster: [],
    fanoutMaxConcurrency: 4,
    toolCatalog: { declared: false, mcp: [], tools: [] },
    budget: { maxTurns: 0, maxWallclockSeconds: 0, maxCostUsd: 0 },
    safety: {},
    hitl: { requireApproval: false, onMutation: "require_approval", changeSetTtlMs: 600_000 },
    planner: { enabled: false },
    edgeTrigger: {},
    a2a: { expose: false, skillName: TRIVIAL_NAME, skillDescription: "", auth: { required: false, scopes: [] } },
    agui: {
      expose: false,
      endpointPath: `/agui/${TRIVIAL_NAME}`,
      sessionModel: "per_thread",
      auth: { required: false, scopes: [] },
    },
  };
}
