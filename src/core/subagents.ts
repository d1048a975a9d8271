/**
 * Subagents, pure (D351): the roster entry, the branch labels an instance's rows carry, the
 * tools an entry grants, and the parent-session rows that record each instance's launch and end
 * (folded back into the instances after a restart). An instance's own rows live in its parent
 * session's log with `branch` set to its label: `<name>` for a call the parent's model made
 * (sync), `bg.<name>` for a background launch, a `-<n>` suffix from the second instance on.
 */
import type { CommittedRow, SessionEvent } from "./events.ts";
import type { ModelSpec } from "./model.ts";

/** One subagent of the configured roster. */
export interface SubagentSpec {
  name: string;
  description: string;
  /** The model its turns call; absent: the daemon's model. */
  model?: ModelSpec;
  /** The agent whose sessions carry it (the daemon's agent). */
  root: string;
  /** The tools it may call: exact names, or a prefix ending in `*`. */
  tools: readonly string[];
  /** The parent's model is offered it as a tool (modes `[sync, async]`); else only launched (`[async]`). */
  parentTool: boolean;
  /** Its system prompt. */
  instructions: string;
}

/** Tools that steer a session's own loop: never granted to a subagent, never listed for one. */
export const LOOP_CONTROL_TOOLS: ReadonlySet<string> = new Set(["return_result", "report_alert", "schedule_next_turn"]);

/** The author of the parent rows recording a subagent instance's launch and end. */
export const SUBAGENT_AUTHOR = "agent/subagent";
export const SUBAGENT_START = "subagent-start";
export const SUBAGENT_END = "subagent-end";

/** The most labels a branch scan reports (past it, absence cannot be observed). */
export const BRANCH_SCAN_CAP = 500;

export type SubagentMode = "sync" | "async";
export type InstanceStatus = "running" | "completed" | "failed" | "canceled" | "stopped" | "cut";

/** A name a subagent may have: it is a path segment and a branch label's root. */
export function isSubagentName(name: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(name) && !/-\d+$/.test(name);
}

/** Whether `spec` grants `tool` (loop-control tools never). */
export function grants(spec: Pick<SubagentSpec, "tools">, tool: string): boolean {
  if (LOOP_CONTROL_TOOLS.has(tool)) return false;
  return spec.tools.some((pattern) =>
    pattern.endsWith("*") ? tool.startsWith(pattern.slice(0, -1)) : pattern === tool,
  );
}

/** The four launch spellings of a name: `<name>`, `bg.<name>`, `sub.<name>`, `remote.<name>`. */
export function launchSpellings(name: string): string[] {
  return [name, `bg.${name}`, `sub.${name}`, `remote.${name}`];
}

/** The label of a new instance: the mode's spelling, `-<n>` after it when taken. */
export function instanceLabel(name: string, mode: SubagentMode, taken: ReadonlySet<string>): string {
  const base = mode === "sync" ? name : `bg.${name}`;
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) if (!taken.has(`${base}-${n}`)) return `${base}-${n}`;
}

/**
 * Whether `label` is one of `name`'s branches: a launch spelling, that spelling with a `-<digits>`
 * instance counter, or a descendant of either (`<spelling>.<more>`). Anchored: `ab` is not `a`'s.
 */
export function belongsTo(label: string, name: string): boolean {
  return launchSpellings(name).some((spelling) => {
    if (label === spelling) return true;
    if (!label.startsWith(spelling)) return false;
    const rest = label.slice(spelling.length);
    return rest.startsWith(".") || /^-\d+(\..*)?$/.test(rest);
  });
}

/** The subagent name a label was launched under (its root spelling without prefix or counter). */
export function nameOfLabel(label: string): string {
  const first = label.replace(/^(bg|sub|remote)\./, "").split(".")[0] ?? label;
  return first.replace(/-\d+$/, "");
}

/** One instance as the parent's rows and the live registry know it. */
export interface SubagentInstance {
  name: string;
  label: string;
  mode: SubagentMode;
  task: string;
  startedAt: string;
  status: InstanceStatus;
  /** The instance's last answer (or error), shortened. */
  lastReport?: string;
  turns: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  /** Times auto-continue carried it on after a cut (its re-drive sequence). */
  continues: number;
}

/** What a session's subagents spent, for /context's `subtask_*`. */
export interface SubtaskTotals {
  turns: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

export const ZERO_SUBTASKS: SubtaskTotals = { turns: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 };

/** The longest report kept on an end row (the full answer is the instance's own rows). */
export const REPORT_CHARS = 4000;

export function shortReport(text: string): string {
  return text.length <= REPORT_CHARS ? text : `${text.slice(0, REPORT_CHARS)}…`;
}

/** The metadata of an instance's start row. */
export function startMetadata(instance: SubagentInstance): Record<string, unknown> {
  return {
    agent: instance.name,
    branch: instance.label,
    mode: instance.mode,
    task: shortReport(instance.task),
    started_at: instance.startedAt,
  };
}

/** The metadata of the start row of a cut instance carried on (its `continued` attempt). */
export function continueMetadata(instance: SubagentInstance): Record<string, unknown> {
  return { agent: instance.name, branch: instance.label, mode: instance.mode, continued: instance.continues };
}

/** The metadata of an instance's end row: its status, report and what this run of it spent. */
export function endMetadata(instance: SubagentInstance, spent: SubtaskTotals = ZERO_SUBTASKS): Record<string, unknown> {
  return {
    agent: instance.name,
    branch: instance.label,
    status: instance.status,
    ...(instance.lastReport === undefined ? {} : { report: instance.lastReport }),
    turns: spent.turns,
    input_tokens: spent.inputTokens,
    output_tokens: spent.outputTokens,
    cost_usd: spent.costUsd,
  };
}

/**
 * The instances a session's rows record, in launch order. An instance with a start row and no end
 * row reads `running`: read when a session is loaded, it was running when the process stopped
 * (the loader writes the end row saying it was cut).
 */
export function foldInstances(rows: readonly CommittedRow[]): SubagentInstance[] {
  const byLabel = new Map<string, SubagentInstance>();
  for (const { event } of rows) {
    if (event.kind !== "audit" || event.author !== SUBAGENT_AUTHOR) continue;
    const meta = event.metadata;
    const label = typeof meta.branch === "string" ? meta.branch : undefined;
    if (label === undefined) continue;
    if (event.name === SUBAGENT_START) {
      const carried = byLabel.get(label);
      if (carried !== undefined && meta.continued !== undefined) {
        // A cut instance carried on by auto-continue: the same instance, running again.
        carried.status = "running";
        carried.continues += 1;
        continue;
      }
      byLabel.set(label, {
        name: String(meta.agent ?? nameOfLabel(label)),
        label,
        mode: meta.mode === "sync" ? "sync" : "async",
        task: String(meta.task ?? ""),
        startedAt: String(meta.started_at ?? event.ts),
        status: "running",
        turns: 0,
        inputTokens: 0,
        outputTokens: 0,
        costUsd: 0,
        continues: 0,
      });
    } else if (event.name === SUBAGENT_END) {
      const instance = byLabel.get(label);
      if (instance === undefined) continue;
      instance.status = isStatus(meta.status) ? meta.status : "failed";
      if (typeof meta.report === "string") instance.lastReport = meta.report;
      instance.turns += numberOf(meta.turns);
      instance.inputTokens += numberOf(meta.input_tokens);
      instance.outputTokens += numberOf(meta.output_tokens);
      instance.costUsd += numberOf(meta.cost_usd);
    }
  }
  return [...byLabel.values()];
}

/** The subtask totals of a set of instances. */
export function subtaskTotals(instances: Iterable<SubagentInstance>): SubtaskTotals {
  const totals = { ...ZERO_SUBTASKS };
  for (const instance of instances) {
    totals.turns += instance.turns;
    totals.inputTokens += instance.inputTokens;
    totals.outputTokens += instance.outputTokens;
    totals.costUsd += instance.costUsd;
  }
  return totals;
}

/** A session's own rows: those no subagent instance wrote. */
export function ownRows(rows: readonly CommittedRow[]): CommittedRow[] {
  return rows.filter((row) => row.event.branch === undefined);
}

/** The rows instance `label` wrote (its conversation, rebuilt after a restart). */
export function branchEvents(rows: readonly CommittedRow[], label: string): SessionEvent[] {
  return rows.filter((row) => row.event.branch === label).map((row) => row.event);
}

function isStatus(value: unknown): value is InstanceStatus {
  return (
    value === "running" ||
    value === "completed" ||
    value === "failed" ||
    value === "canceled" ||
    value === "stopped" ||
    value === "cut"
  );
}

function numberOf(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}
