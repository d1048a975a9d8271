/**
 * The workload domain type (docs/svc-workloads.md): a bundle (`workload.yaml`) with its specialists
 * (`*.tmpl`) resolved, defaults applied, durations in milliseconds. Types only: the loader
 * (`load-workload.ts`) builds these, the daemon reads them. The runtime core never imports this
 * layer.
 */
import type { McpCatalog } from "../../mcp/catalog.ts";
import type { DeclaredRemoteAgent } from "../../a2a-client/remote-agent-wiring.ts";

/** The shapes a workload can be composed as (docs/svc.md#dispatch-shapes). */
export type DispatchShape = "coordinator" | "graph" | "fanout" | "bounded";
/** What a bundle or `--dispatch` may ask for: a shape, or `auto` (never picks bounded). */
export type DispatchSetting = DispatchShape | "auto";
export type SessionMode = "single_session" | "multi_session";
export type SpecialistMode = "Task" | "SingleTurn";
export type Capability = "read_only" | "change_executor";
export type ModelTier = "small" | "mid" | "frontier";
export type WatchdogPosture = "warn" | "feedback" | "enforce";
export type OnMutation = "require_approval" | "apply" | "dry_run";
export type AguiSessionModel = "per_thread" | "per_run";

/** One entry of a specialist's `tools.mcp`: a server, and optionally the only tools it may use. */
export interface McpGrant {
  server: string;
  /** Absent: the whole server. */
  tools?: string[];
}

export interface SpecialistTools {
  /** `inherit` (no `tools.mcp` key): every wired server; a list (maybe empty): only those. */
  mcp: "inherit" | McpGrant[];
  /** A declaration only: grants nothing, but the capability checks read it. */
  builtin: string[];
}

export interface SpecialistBudget {
  maxTurns?: number;
  maxCostUsd?: number;
  maxWallclockSeconds?: number;
}

export interface OutputSchema {
  /** Absolute path of the schema file. */
  path: string;
  schema: Record<string, unknown>;
}

export interface Specialist {
  name: string;
  description: string;
  mode: SpecialistMode;
  capability: Capability;
  /** Exact model id; absent inherits `--model`. */
  model?: string;
  tier?: ModelTier;
  budget: SpecialistBudget;
  outputSchema?: OutputSchema;
  tools: SpecialistTools;
  /** The body after the front matter, trimmed: the specialist's system prompt. */
  instruction: string;
  /** The `.tmpl` file it came from. */
  file: string;
}

export interface Precondition {
  /** A read-only tool whose result is re-read before a granted call fires. */
  read: string;
  args: Record<string, unknown>;
  /** read argument -> change argument. */
  argsFrom: Record<string, string>;
  /** Dotted paths; empty: digest the whole result. */
  fields: string[];
}

export interface ToolOverride {
  name: string;
  /** Absent: the default class (mutating). */
  mutating?: boolean;
  precondition?: Precondition;
}

export interface ToolCatalog {
  /** The bundle has a `tool_catalog` block (a specialist without `tools.mcp` then inherits tools). */
  declared: boolean;
  /** Servers of `mcp.json` the workload uses. */
  mcp: { server: string }[];
  tools: ToolOverride[];
}

export interface WorkloadBudget {
  /** Model calls per session; 0 = unlimited. */
  maxTurns: number;
  /** Per-turn timeout and shutdown drain bound; 0 = none (drain 30 s). */
  maxWallclockSeconds: number;
  /** Session-cumulative ceiling; 0 = none. */
  maxCostUsd: number;
}

export interface Hitl {
  /** Result-level approval gate (graph, fanout). */
  requireApproval: boolean;
  onMutation: OnMutation;
  changeSetTtlMs: number;
}

export interface ScheduledTrigger {
  intervalMs: number;
  jitterMs: number;
  prompt?: string;
}

export interface EdgeTrigger {
  /** Informational only. */
  http?: { path?: string; auth?: string };
  scheduled?: ScheduledTrigger;
}

export interface MonitorCollect {
  tool: string;
  args: Record<string, unknown>;
  /** `as`, or the tool's name. */
  key: string;
}

export interface Monitor {
  collect: MonitorCollect[];
  transitionsFrom?: string;
  notify?: { conversation: string; digestAfterMs?: number };
  ack?: { tool: string; args: Record<string, unknown> };
}

export interface ListenerAuth {
  required: boolean;
  scopes: string[];
}

export interface A2aExposure {
  expose: boolean;
  skillName: string;
  skillDescription: string;
  inputSchema?: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  auth: ListenerAuth;
}

export interface AguiExposure {
  expose: boolean;
  endpointPath: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
  sessionModel: AguiSessionModel;
  auth: ListenerAuth;
}

/** A static remote A2A agent from `<root>/a2a/*.yaml` (name mode): the A2A client's declaration. */
export type RemoteAgent = DeclaredRemoteAgent;

export interface Workload {
  name: string;
  description: string;
  mode: SessionMode;
  /** The bundle's `specialists:` list, in order (the coordinator's sub-agents). */
  roster: string[];
  /** The dispatch shape this workload runs as, after the precedence rule. */
  dispatch: DispatchShape;
  /** The composed spec set: every loaded `.tmpl` by name (directory mode), the roster (name mode). */
  specialists: Specialist[];
  /** `fanout.max_concurrency`: 4 by default, `unbounded` when negative. */
  fanoutMaxConcurrency: number | "unbounded";
  toolCatalog: ToolCatalog;
  budget: WorkloadBudget;
  safety: { watchdog?: WatchdogPosture };
  hitl: Hitl;
  planner: { enabled: boolean };
  edgeTrigger: EdgeTrigger;
  monitor?: Monitor;
  a2a: A2aExposure;
  agui: AguiExposure;
}

/** Where the workload came from. */
export type WorkloadSource =
  | { kind: "directory"; directory: string }
  | { kind: "name"; root: string; rootSource: string; file: string }
  | { kind: "trivial" };

export interface LoadedWorkload {
  workload: Workload;
  source: WorkloadSource;
  /** Where `mcp.json` lives for this mode (read only when tool servers are wired and used). */
  mcpCatalogPath?: string;
  /** The parsed catalog, when it was read. */
  mcpCatalog?: McpCatalog;
  /** Static remote agents of the config root (name mode). */
  remoteAgents: RemoteAgent[];
  /** Lines for the caller to log at info level (which root won, each tool override). */
  notices: string[];
  /** Lines for the caller to log at warn level (trivial workload, ignored roots, graph without _fallback). */
  warnings: string[];
}
