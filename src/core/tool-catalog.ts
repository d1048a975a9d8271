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

/** What a caller may add to one run besides the call. */
export interface ToolRunOptions {
  /**
   * Request metadata for a tool server: an MCP call sends it as `params._meta` (merged with what
   * the SDK adds), so a server can, for instance, deduplicate on an idempotency key the caller
   * chose. Builtin tools ignore it. Plain JSON data (it crosses the worker boundary).
   */
  meta?: Record<string, unknown>;
}

/** Runs approved calls (the permission gate's executor). */
export interface ToolRunner {
  /** A tool by this name exists and is enabled. */
  has(name: string): boolean;
  /** The tool's class for the permission gate, when the tool declares one. */
  classOf(name: string): ToolClass | undefined;
  run(call: ToolCall, signal: AbortSignal, options?: ToolRunOptions): Promise<ToolRunResult>;
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
