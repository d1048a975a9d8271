/**
 * Plan-first, pure (D465, D466): `record_plan`'s tool spec and argument check, the audit row a
 * recorded plan leaves (author `agent/plan`, name `plan-recorded`), the fold that reads back from a
 * session's log whether it has recorded one (so the gate stays open across restarts), and the
 * refusal a cluster tool call gets before that. No I/O.
 */
import type { CommittedRow } from "./events.ts";
import type { ToolSpec } from "./model.ts";
import { type Result, err, ok } from "./result.ts";
import type { ToolInfo } from "./tool-catalog.ts";
import type { WaitVerifySettings } from "./wait-verify.ts";

export const PLAN_AUTHOR = "agent/plan";
export const PLAN_RECORDED = "plan-recorded";
export const RECORD_PLAN = "record_plan";
/** The longest plan kept (the file and the row's copy): 64 KiB of text. */
export const PLAN_MAX_BYTES = 64 * 1024;

export const RECORD_PLAN_SPEC: ToolSpec = {
  name: RECORD_PLAN,
  description:
    "Record your plan for this session before any cluster tool call (they are refused until a plan is recorded). " +
    "Markdown: the incident, your diagnosis so far, the root-cause hypothesis, the read-only checks you plan " +
    "(tool and why), and how you will verify. Written as plan-<seq>.md and shown on the session's event log.",
  inputSchema: {
    type: "object",
    properties: { plan: { type: "string", description: "the plan, non-empty markdown" } },
    required: ["plan"],
    additionalProperties: false,
  },
};

/** `record_plan`'s argument: non-empty markdown within PLAN_MAX_BYTES. */
export function parsePlan(args: Record<string, unknown>): Result<string> {
  const plan = args.plan;
  if (typeof plan !== "string" || plan.trim() === "") return err("record_plan needs `plan`: non-empty markdown");
  const bytes = new TextEncoder().encode(plan).length;
  if (bytes > PLAN_MAX_BYTES) return err(`the plan is ${bytes} bytes, more than the ${PLAN_MAX_BYTES}-byte limit`);
  return ok(plan.endsWith("\n") ? plan : `${plan}\n`);
}

/** Whether the session's log holds a recorded plan (D465: sticky for the session's life). */
export function planRecordedIn(rows: readonly CommittedRow[]): boolean {
  return rows.some((row) => row.event.kind === "audit" && row.event.name === PLAN_RECORDED);
}

/** What a cluster tool call before the plan reads (D465). */
export function planFirstRefusal(tool: string): string {
  return `plan first: ${tool} was not run. This session must record a plan before any cluster tool call: call ${RECORD_PLAN} with your plan (incident, diagnosis, planned read-only checks, verification), then call ${tool} again.`;
}

/**
 * The triage tools' settings (D465-D467), carried with the permission settings: plan-first, and
 * wait_and_verify when configured. `tools` reads the catalog as it is now (the runtime core sets
 * it): every tool of an MCP server is a cluster tool.
 */
export interface TriageSettings {
  /** `permissions.require_plan_artifact`: cluster tool calls refused until `record_plan` ran (D465). */
  requirePlan: boolean;
  /** `tools.wait_and_verify.*`; absent: the tool is not offered (D467). */
  waitAndVerify?: WaitVerifySettings;
  tools?: () => readonly ToolInfo[];
}

/** Whether `name` is a cluster tool: a tool of a configured MCP server (D465). */
export function isClusterTool(settings: TriageSettings, name: string): boolean {
  return settings.tools?.().some((tool) => tool.name === name && tool.source === "mcp") ?? false;
}
