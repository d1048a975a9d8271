/**
 * The subagent roster from the config file (D351): `agent.subagents`, a list of entries
 * `{name, description, instructions?, model?, tools?, parent_tool?}`. Each entry is checked once at
 * start; a bad one is an error naming the entry and the key.
 */
import type { ModelSpec } from "../core/model.ts";
import { type Result, err, ok } from "../core/result.ts";
import { LOOP_CONTROL_TOOLS, type SubagentSpec, isSubagentName } from "../core/subagents.ts";

export const SUBAGENTS_KEY = "agent.subagents";

const ENTRY_KEYS = new Set(["name", "description", "instructions", "model", "tools", "parent_tool"]);

/** The roster under `agent.subagents` (absent: none), each entry's model resolved against the daemon's. */
export function resolveSubagents(
  config: ReadonlyMap<string, unknown>,
  model: ModelSpec,
  agentName: string,
): Result<SubagentSpec[]> {
  const value = config.get(SUBAGENTS_KEY);
  if (value === undefined) return ok([]);
  if (!Array.isArray(value)) return err(`config key ${SUBAGENTS_KEY} must be a list of subagents`);
  const roster: SubagentSpec[] = [];
  for (const [index, entry] of value.entries()) {
    const where = `config key ${SUBAGENTS_KEY}[${index}]`;
    const spec = subagentEntry(entry, where, model, agentName);
    if (!spec.ok) return spec;
    if (roster.some((other) => other.name === spec.value.name))
      return err(`${where}: the name ${spec.value.name} is used twice`);
    roster.push(spec.value);
  }
  return ok(roster);
}

function subagentEntry(entry: unknown, where: string, model: ModelSpec, agentName: string): Result<SubagentSpec> {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry))
    return err(`${where} must be an object with name and description`);
  const fields = entry as Record<string, unknown>;
  const unknown = Object.keys(fields).find((key) => !ENTRY_KEYS.has(key));
  if (unknown !== undefined) return err(`${where}: unknown key ${unknown} (known: ${[...ENTRY_KEYS].join(", ")})`);
  const { name, description, instructions, tools, parent_tool: parentTool } = fields;
  if (typeof name !== "string" || !isSubagentName(name))
    return err(`${where}.name must be letters, digits, _ and - (up to 64, not ending in -<digits>)`);
  if (typeof description !== "string" || description.trim() === "")
    return err(`${where}.description must be a non-empty string`);
  if (instructions !== undefined && typeof instructions !== "string")
    return err(`${where}.instructions must be a string`);
  if (parentTool !== undefined && typeof parentTool !== "boolean")
    return err(`${where}.parent_tool must be true or false`);
  const granted = toolList(tools, `${where}.tools`);
  if (!granted.ok) return granted;
  const chosen = subagentModel(fields.model, model, `${where}.model`);
  if (!chosen.ok) return chosen;
  return ok({
    name,
    description: description.trim(),
    root: agentName,
    tools: granted.value,
    parentTool: parentTool ?? true,
    instructions:
      instructions ??
      `You are ${name}, a subagent: ${description.trim()} Do the task you are given and answer with the result.`,
    ...(chosen.value === undefined ? {} : { model: chosen.value }),
  });
}

function toolList(value: unknown, where: string): Result<string[]> {
  if (value === undefined) return ok([]);
  if (!Array.isArray(value) || !value.every((tool) => typeof tool === "string" && tool !== ""))
    return err(`${where} must be a list of tool names (a trailing * matches a prefix)`);
  const loop = value.find((tool) => LOOP_CONTROL_TOOLS.has(tool));
  if (loop !== undefined)
    return err(`${where}: ${loop} steers a session's own loop and cannot be granted to a subagent`);
  return ok(value as string[]);
}

/** Another model of the daemon's provider; the offline models (echo, scripted) have only themselves. */
function subagentModel(value: unknown, model: ModelSpec, where: string): Result<ModelSpec | undefined> {
  if (value === undefined || value === model.name) return ok(undefined);
  if (typeof value !== "string" || value === "") return err(`${where} must be a model name`);
  if (model.provider === "echo" || model.provider === "scripted")
    return err(`${where}: the ${model.provider} model has no other models; leave it out`);
  return ok({ ...model, name: value });
}
