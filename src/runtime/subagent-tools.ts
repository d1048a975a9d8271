/**
 * The parent's side of subagents (D351): the catalog offers each roster entry that is a parent
 * tool under its own name (`source: subagent` on GET /tools), and SubagentCallTools answers such a
 * call by running an instance synchronously (the parent's turn waits for its answer; ending the
 * parent's turn stops it). Every other call goes on to the session's permission gate.
 */
import type { ToolCall } from "../core/events.ts";
import type { ToolSpec } from "../core/model.ts";
import type { ToolCatalog, ToolInfo, ToolRunResult, ToolRunner } from "../core/tool-catalog.ts";
import type { SubagentSpec } from "../core/subagents.ts";
import type { ToolVerdict, TurnTools } from "./gated-tools.ts";
import type { SubagentPort } from "./subagent-port.ts";
import { TurnCalls } from "./turn-calls.ts";

/** The parent tool a roster entry is offered as. */
export function subagentToolSpec(spec: SubagentSpec): ToolSpec {
  return {
    name: spec.name,
    description: `Subagent: ${spec.description} Give it one self-contained task; it answers when done.`,
    inputSchema: {
      type: "object",
      properties: { task: { type: "string", description: "the task, with everything the subagent needs to know" } },
      required: ["task"],
      additionalProperties: false,
    },
  };
}

/** The daemon's catalog with the roster's parent tools added (a name a tool has already is refused). */
export function withSubagentTools<T extends ToolRunner & ToolCatalog>(
  catalog: T,
  roster: readonly SubagentSpec[],
): ToolRunner & ToolCatalog {
  const tools = roster.filter((spec) => spec.parentTool);
  if (tools.length === 0) return catalog;
  for (const spec of tools)
    if (catalog.has(spec.name)) throw new Error(`subagent ${spec.name}: a tool has this name already`);
  const names = new Set(tools.map((spec) => spec.name));
  return {
    has: (name) => names.has(name) || catalog.has(name),
    classOf: (name) => (names.has(name) ? undefined : catalog.classOf(name)),
    run: (call, signal, options): Promise<ToolRunResult> =>
      names.has(call.name)
        ? Promise.resolve({ output: { error: "a subagent runs only as a session's tool call" }, isError: true })
        : catalog.run(call, signal, options),
    specs: () => [...catalog.specs(), ...tools.map(subagentToolSpec)],
    list: (): ToolInfo[] => [
      ...catalog.list(),
      ...tools.map((spec) => ({ name: spec.name, description: spec.description, source: "subagent" as const })),
    ],
  };
}

/** A session's tools with its parent-tool subagents answered in front of the gate. */
export class SubagentCallTools implements TurnTools {
  readonly #inner: TurnTools;
  readonly #subagents: SubagentPort;
  readonly #calls = new TurnCalls();

  constructor(inner: TurnTools, subagents: SubagentPort) {
    this.#inner = inner;
    this.#subagents = subagents;
  }

  run(call: ToolCall, turnId: string): Promise<ToolVerdict> {
    const spec = this.#subagents.roster.find((entry) => entry.parentTool && entry.name === call.name);
    if (spec === undefined) return this.#inner.run(call, turnId);
    const task = typeof call.args.task === "string" ? call.args.task.trim() : "";
    if (task === "")
      return Promise.resolve({ result: { output: { error: "give the subagent a non-empty `task`" }, isError: true } });
    return this.#calls.run(turnId, async (signal) => {
      const { instance, answer } = await this.#subagents.launch(spec.name, task, "sync", signal);
      const output: Record<string, unknown> = {
        agent: instance.name,
        branch: instance.label,
        status: instance.status,
        result: answer,
      };
      return { result: { output, isError: instance.status !== "completed" }, permission: "subagent" };
    });
  }

  endTurn(turnId: string): Promise<void> {
    this.#calls.end(turnId);
    return this.#inner.endTurn(turnId);
  }
}
