/**
 * The tool interfaces every layer shares: what a session's tools are (ToolCatalog: the specs the
 * model is offered, the GET /tools rows) and how an approved call runs (ToolRunner). The runtime's
 * ToolHost implements both; skills wrap them; surfaces read the catalog (D217). Pure types, no I/O.
 */
import type { ToolCall } from "./events.ts";
import type { ToolSpec } from "./model.ts";
import type { ToolClass } from "./permission-policy.ts";

/** What running one tool call produced: the model reads `output`; `isError` marks a failure. */
export interface ToolRunResult {
  output: Record<string, unknown>;
  isError: boolean;
  /**
   * The call was parked (an approval gate holds it): `output` stands in for its result, and the
   * turn ends once the rest of this response's calls are answered, without another model call.
   */
  endsTurn?: true;
}

/** Runs approved calls (the permission gate's executor). */
export interface ToolRunner {
  /** A tool by this name exists and is enabled. */
  has(name: string): boolean;
  /** The tool's class for the permission gate, when the tool declares one. */
  classOf(name: string): ToolClass | undefined;
  /** `meta` travels to an MCP tool server as the request's `_meta` (an idempotency key). */
  run(call: ToolCall, signal: AbortSignal, options?: { meta?: Record<string, unknown> }): Promise<ToolRunResult>;
}

/** What is listed about one tool (GET /tools spells it for the attach wire). */
export interface ToolInfo {
  name: string;
  description: string;
  source: "builtin" | "mcp" | "skill" | "subagent" | "other";
  server?: string;
  /** MCP tools: the permission gate's class is read-only (readOnlyHint or the catalog override). */
  readOnly?: boolean;
}

/** The tools a session has: what the model is offered and what GET /tools lists. */
export interface ToolCatalog {
  specs(): ToolSpec[];
  list(): ToolInfo[];
}
