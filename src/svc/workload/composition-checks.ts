/**
 * The startup refusals over a loaded workload (docs/svc-workloads.md#startup-refusals): a read-only
 * Task specialist that can reach a mutating tool; a composed sub-agent named like a mutating tool;
 * the planner with a change executor unless mutations apply; a monitor tool a roster member can
 * reach. Tool lists of live servers are optional input (`serverTools`): without them the checks see
 * the tools named in the bundle and the `.tmpl` files. Pure.
 */
import { isMutating } from "./tool-mutation.ts";
import type { Specialist, Workload } from "./workload.ts";

/** Tools each MCP server offers, when known (the daemon can pass them once servers answer). */
export type ServerTools = Readonly<Record<string, readonly string[]>>;

const FIX = "Fix: list only read-only tools, write mcp: [], or declare capability: change_executor";

function capabilityProblems(specialist: Specialist, workload: Workload): string[] {
  if (specialist.capability !== "read_only" || specialist.mode === "SingleTurn") return [];
  const overrides = workload.toolCatalog.tools;
  const where = `read-only specialist "${specialist.name}"`;
  const problems: string[] = [];
  const mcp = specialist.tools.mcp;
  if (mcp === "inherit") {
    if (workload.toolCatalog.declared)
      problems.push(
        `${where} has no tools.mcp, so it inherits every tool of the workload's tool_catalog, mutating ones included. ${FIX}`,
      );
  } else {
    mcp.forEach((grant, index) => {
      if (grant.tools === undefined)
        problems.push(
          `${where} is granted the whole MCP server "${grant.server}" (tools.mcp[${index}] has no tools:), mutating tools included. ${FIX}`,
        );
      for (const tool of grant.tools ?? [])
        if (isMutating(tool, overrides))
          problems.push(`${where} can reach the mutating tool "${tool}" (tools.mcp[${index}].tools). ${FIX}`);
    });
  }
  for (const tool of specialist.tools.builtin)
    if (isMutating(tool, overrides))
      problems.push(`${where} can reach the mutating tool "${tool}" (tools.builtin). ${FIX}`);
  return problems;
}

/** The tools a specialist can call: SingleTurn none; explicit lists; whole servers when their tools are known. */
export function reachableTools(specialist: Specialist, workload: Workload, serverTools: ServerTools = {}): Set<string> {
  const reach = new Set<string>();
  if (specialist.mode === "SingleTurn") return reach;
  const mcp = specialist.tools.mcp;
  const grants =
    mcp === "inherit"
      ? workload.toolCatalog.mcp.map((entry) => ({ server: entry.server, tools: undefined }))
      : mcp.map((grant) => ({ server: grant.server, tools: grant.tools }));
  for (const grant of grants) for (const tool of grant.tools ?? serverTools[grant.server] ?? []) reach.add(tool);
  for (const tool of specialist.tools.builtin) reach.add(tool);
  return reach;
}

/** The specialists that become sub-agents: the roster under coordinator, the whole spec set otherwise. */
export function composedSpecialists(workload: Workload): Specialist[] {
  if (workload.dispatch !== "coordinator") return workload.specialists;
  return workload.specialists.filter((specialist) => workload.roster.includes(specialist.name));
}

/** Every tool name the workload mentions or the servers offer. */
function knownTools(workload: Workload, serverTools: ServerTools): Set<string> {
  const names = new Set<string>(workload.toolCatalog.tools.map((tool) => tool.name));
  for (const specialist of workload.specialists)
    for (const tool of reachableTools(specialist, workload, serverTools)) names.add(tool);
  for (const tools of Object.values(serverTools)) for (const tool of tools) names.add(tool);
  return names;
}

function nameClashProblems(workload: Workload, serverTools: ServerTools): string[] {
  const tools = knownTools(workload, serverTools);
  return composedSpecialists(workload)
    .filter((specialist) => tools.has(specialist.name) && isMutating(specialist.name, workload.toolCatalog.tools))
    .map(
      (specialist) =>
        `specialist "${specialist.name}" has the name of a mutating tool: a call to "${specialist.name}" would be both a delegation and a change. Rename the specialist (name: in ${specialist.file})`,
    );
}

function plannerProblems(workload: Workload): string[] {
  if (!workload.planner.enabled || workload.hitl.onMutation === "apply") return [];
  return workload.specialists
    .filter((specialist) => specialist.capability === "change_executor")
    .map(
      (specialist) =>
        `planner.enabled with change executor "${specialist.name}" needs hitl.on_mutation: apply (it is ${workload.hitl.onMutation}): the planner cannot park on the write gate. Turn the planner off or set on_mutation: apply`,
    );
}

function monitorProblems(workload: Workload, serverTools: ServerTools): string[] {
  const monitor = workload.monitor;
  if (monitor === undefined) return [];
  const monitorTools = [...monitor.collect.map((entry) => entry.tool), ...(monitor.ack ? [monitor.ack.tool] : [])];
  const problems: string[] = [];
  for (const specialist of workload.specialists) {
    const reach = reachableTools(specialist, workload, serverTools);
    for (const tool of new Set(monitorTools))
      if (reach.has(tool))
        problems.push(
          `monitor tool "${tool}" is reachable by specialist "${specialist.name}": monitor tools are the daemon's own. Remove it from the specialist's tools`,
        );
  }
  return problems;
}

/** Every refusal, each a message naming the specialist or tool and the fix. */
export function compositionProblems(workload: Workload, serverTools: ServerTools = {}): string[] {
  return [
    ...workload.specialists.flatMap((specialist) => capabilityProblems(specialist, workload)),
    ...nameClashProblems(workload, serverTools),
    ...plannerProblems(workload),
    ...monitorProblems(workload, serverTools),
  ];
}
