/**
 * `workload.yaml` to the workload's own fields (docs/svc-workloads.md#workloadyaml-keys): schema validation (bundle-schema.ts),
 * then the rules that span fields (hitl vs hitl_policy, duplicates, preconditions, the scheduled
 * trigger's interval and jitter, monitor), then defaults. Every error names the file, the dotted
 * field and what was expected. Pure: the caller reads the file.
 */
import * as v from "valibot";
import { type Result, err, ok } from "../../core/result.ts";
import { BUNDLE_SCHEMA, type RawBundle, type RawHitl, type RawTool } from "./bundle-schema.ts";
import { checkMonitor, toMonitor } from "./monitor-rules.ts";
import type { DispatchSetting, EdgeTrigger, Hitl, ToolOverride, Workload } from "./workload.ts";
import { fieldError, formatIssue, parseYamlMapping } from "./yaml-document.ts";

/** A bundle's fields: a workload before its specialists are loaded and its dispatch is resolved. */
export type BundleFile = Omit<Workload, "dispatch" | "specialists"> & { declaredDispatch?: DispatchSetting };

const DEFAULT_CHANGE_SET_TTL_MS = 10 * 60_000;
const MIN_INTERVAL_MS = 1000;
const MAX_DEFAULT_JITTER_MS = 30_000;
const DEFAULT_FANOUT_CONCURRENCY = 4;

/** Parse and validate one bundle; `label` is the file as it is named in errors. */
export function parseBundleFile(source: string, label: string): Result<BundleFile> {
  const document = parseYamlMapping(source, label);
  if (!document.ok) return document;
  const parsed = v.safeParse(BUNDLE_SCHEMA, document.value);
  if (!parsed.success) return err(parsed.issues.map((issue) => formatIssue(label, issue)).join("\n"));
  const raw = parsed.output;
  const problems = [
    ...duplicates(raw.specialists, "specialists", "specialist"),
    ...duplicates(
      (raw.tool_catalog?.tools ?? []).map((tool) => tool.name),
      "tool_catalog.tools",
      "tool",
      ".name",
    ),
    ...preconditionProblems(raw.tool_catalog?.tools ?? []),
    ...checkMonitor(raw.monitor, raw.edge_trigger.scheduled !== undefined),
  ];
  if (raw.hitl !== undefined && raw.hitl_policy !== undefined)
    problems.push(["hitl_policy", "not allowed together with hitl: use one of the two"]);
  const hitl = resolveHitl(raw.hitl ?? raw.hitl_policy, raw.hitl === undefined ? "hitl_policy" : "hitl", problems);
  const edgeTrigger = resolveEdgeTrigger(raw, problems);
  if (problems.length > 0) return err(problems.map(([path, message]) => fieldError(label, path, message)).join("\n"));
  return ok(toBundleFile(raw, hitl, edgeTrigger));
}

type Problem = [path: string, message: string];

function duplicates(names: readonly string[], path: string, what: string, suffix = ""): Problem[] {
  const seen = new Set<string>();
  const problems: Problem[] = [];
  names.forEach((name, index) => {
    if (seen.has(name)) problems.push([`${path}[${index}]${suffix}`, `duplicate ${what} ${JSON.stringify(name)}`]);
    seen.add(name);
  });
  return problems;
}

function preconditionProblems(tools: readonly RawTool[]): Problem[] {
  const readOnly = new Set(tools.filter((tool) => tool.mutating === false).map((tool) => tool.name));
  const problems: Problem[] = [];
  tools.forEach((tool, index) => {
    const precondition = tool.precondition;
    if (precondition === undefined) return;
    const path = `tool_catalog.tools[${index}].precondition`;
    if (precondition.read === tool.name)
      problems.push([`${path}.read`, `must name a read tool other than ${JSON.stringify(tool.name)} itself`]);
    else if (!readOnly.has(precondition.read))
      problems.push([
        `${path}.read`,
        `${JSON.stringify(precondition.read)} must be classified read-only: list it under tool_catalog.tools with mutating: false`,
      ]);
    for (const readArgument of Object.keys(precondition.args_from))
      if (readArgument.trim() === "")
        problems.push([`${path}.args_from`, "expected non-empty read argument names, got an empty one"]);
  });
  return problems;
}

function resolveHitl(raw: RawHitl | undefined, key: string, problems: Problem[]): Hitl {
  const ttl = raw?.change_set_ttl ?? DEFAULT_CHANGE_SET_TTL_MS;
  if (ttl <= 0) problems.push([`${key}.change_set_ttl`, "expected a duration greater than zero"]);
  return {
    requireApproval: raw?.require_approval ?? false,
    onMutation: raw?.on_mutation ?? "require_approval",
    changeSetTtlMs: ttl,
  };
}

function resolveEdgeTrigger(raw: RawBundle, problems: Problem[]): EdgeTrigger {
  const trigger: EdgeTrigger = {};
  const http = raw.edge_trigger.http;
  if (http !== undefined)
    trigger.http = {
      ...(http.path === undefined ? {} : { path: http.path }),
      ...(http.auth === undefined ? {} : { auth: http.auth }),
    };
  const scheduled = raw.edge_trigger.scheduled;
  if (scheduled === undefined) return trigger;
  const intervalMs = scheduled.interval;
  if (intervalMs < MIN_INTERVAL_MS)
    problems.push(["edge_trigger.scheduled.interval", "expected a duration of at least 1s"]);
  const jitterMs = scheduled.jitter ?? Math.min(intervalMs / 10, MAX_DEFAULT_JITTER_MS);
  if (jitterMs >= intervalMs)
    problems.push(["edge_trigger.scheduled.jitter", "expected a duration shorter than the interval"]);
  trigger.scheduled = {
    intervalMs,
    jitterMs,
    ...(scheduled.prompt === undefined ? {} : { prompt: scheduled.prompt }),
  };
  return trigger;
}

function toToolOverride(tool: RawTool): ToolOverride {
  const override: ToolOverride = { name: tool.name };
  if (tool.mutating !== undefined) override.mutating = tool.mutating;
  if (tool.precondition !== undefined)
    override.precondition = {
      read: tool.precondition.read,
      args: tool.precondition.args,
      argsFrom: tool.precondition.args_from,
      fields: tool.precondition.fields,
    };
  return override;
}

function toBundleFile(raw: RawBundle, hitl: Hitl, edgeTrigger: EdgeTrigger): BundleFile {
  const concurrency = raw.fanout.max_concurrency;
  const bundle: BundleFile = {
    name: raw.name,
    description: raw.description,
    mode: raw.mode,
    roster: raw.specialists,
    fanoutMaxConcurrency: concurrency < 0 ? "unbounded" : concurrency === 0 ? DEFAULT_FANOUT_CONCURRENCY : concurrency,
    toolCatalog: {
      declared: raw.tool_catalog !== undefined,
      mcp: (raw.tool_catalog?.mcp ?? []).map((entry) => ({ server: entry.server })),
      tools: (raw.tool_catalog?.tools ?? []).map(toToolOverride),
    },
    budget: {
      maxTurns: raw.budget.max_turns,
      maxWallclockSeconds: raw.budget.max_wallclock_seconds,
      maxCostUsd: raw.budget.max_cost_usd,
    },
    safety: raw.safety.watchdog === undefined ? {} : { watchdog: raw.safety.watchdog },
    hitl,
    planner: { enabled: raw.planner.enabled },
    edgeTrigger,
    a2a: {
      expose: raw.a2a.expose,
      skillName: raw.a2a.skill_name ?? raw.name,
      skillDescription: raw.a2a.skill_description ?? raw.description,
      ...(raw.a2a.input_schema === undefined ? {} : { inputSchema: raw.a2a.input_schema }),
      ...(raw.a2a.output_schema === undefined ? {} : { outputSchema: raw.a2a.output_schema }),
      auth: { required: raw.a2a.auth.required, scopes: raw.a2a.auth.scopes },
    },
    agui: {
      expose: raw.agui.expose,
      endpointPath: raw.agui.endpoint_path ?? `/agui/${raw.name}`,
      ...(raw.agui.description === undefined ? {} : { description: raw.agui.description }),
      ...(raw.agui.input_schema === undefined ? {} : { inputSchema: raw.agui.input_schema }),
      sessionModel: raw.agui.session_model,
      auth: { required: raw.agui.auth.required, scopes: raw.agui.auth.scopes },
    },
  };
  if (raw.dispatch !== undefined) bundle.declaredDispatch = raw.dispatch;
  if (raw.monitor !== undefined) bundle.monitor = toMonitor(raw.monitor);
  return bundle;
}
