/**
 * The agents a workload composes (docs/svc.md#coordinator-dispatch): the coordinator
 * `<workload>_coordinator`, whose tools are its specialists (delegating is a call named after the
 * specialist), and each specialist, whose tools are the MCP tools its `tools.mcp` allowlist grants
 * (absent: every server the workload catalogs; `mcp: []`: none) and `finish_task`. Each agent's
 * sessions live under their own app: the coordinator's under svc's app, a specialist's under
 * `<app>.<specialist>` with the coordinator session's id, so a caller of /inject can never address
 * a specialist directly. Also the tool policy of the write gate: MCP tools mutate unless the
 * workload's `tool_catalog.tools[]` marks them `mutating: false`.
 */
import type { ToolSpec } from "../../core/model.ts";
import { CALL_A2A, callA2aSpec } from "../../a2a-client/call-a2a-tool.ts";
import type { RemoteAgentDirectory } from "../../a2a-client/remote-agent-directory.ts";
import type { McpTool } from "../../mcp/mcp-manager.ts";
import type { McpGrant, Precondition, Specialist, Workload } from "../workload/workload.ts";

export const FINISH_TASK = "finish_task";

const FINISH_TASK_SPEC: ToolSpec = {
  name: FINISH_TASK,
  description: "Finish your task: report the result to the coordinator. Call it once, last.",
  inputSchema: {
    type: "object",
    properties: { result: { type: "string", description: "what you found or did, in a few sentences" } },
    required: ["result"],
    additionalProperties: true,
  },
};

/** The tool servers' tools as the roster reads them (the tool host's McpManager). */
export interface McpTools {
  tool(name: string): McpTool | undefined;
  tools(): McpTool[];
}

export interface AgentProfile {
  name: string;
  /** The app its sessions live under. */
  app: string;
  role: "coordinator" | "specialist";
  /** The system prompt of its turns. */
  system: string;
  specialist?: Specialist;
}

export class AgentRoster {
  readonly coordinator: AgentProfile;
  readonly #workload: Workload;
  readonly #specialists = new Map<string, AgentProfile>();
  readonly #byApp = new Map<string, AgentProfile>();
  readonly #servers: () => McpTools | undefined;
  readonly #remote: RemoteAgentDirectory | undefined;

  /**
   * `mcp` gives the tool servers' tools once they are wired (undefined: none); `remote`, the
   * remote A2A agents the coordinator may call with `call_a2a` (name mode's `a2a/*.yaml`).
   */
  constructor(workload: Workload, app: string, mcp: () => McpTools | undefined, remote?: RemoteAgentDirectory) {
    this.#workload = workload;
    this.#remote = remote;
    this.#servers = mcp;
    this.coordinator = {
      name: `${workload.name}_coordinator`,
      app,
      role: "coordinator",
      system: coordinatorPrompt(workload),
    };
    this.#byApp.set(app, this.coordinator);
    const loaded = new Map(workload.specialists.map((specialist) => [specialist.name, specialist]));
    for (const name of workload.roster) {
      const specialist = loaded.get(name);
      if (specialist === undefined) continue;
      const profile: AgentProfile = {
        name,
        app: `${app}.${name}`,
        role: "specialist",
        system: specialistPrompt(specialist),
        specialist,
      };
      this.#specialists.set(name, profile);
      this.#byApp.set(profile.app, profile);
    }
  }

  /** The agent whose sessions live under `app` (undefined: not this workload's). */
  forApp(app: string): AgentProfile | undefined {
    return this.#byApp.get(app);
  }

  specialist(name: string): AgentProfile | undefined {
    return this.#specialists.get(name);
  }

  specialists(): AgentProfile[] {
    return [...this.#specialists.values()];
  }

  /** The tools an agent is offered (a SingleTurn specialist: none, docs/svc-workloads.md#specialist-files). */
  tools(profile: AgentProfile): ToolSpec[] {
    if (profile.role === "coordinator") {
      const delegations = this.specialists().map(delegationSpec);
      return this.callsRemote(CALL_A2A) ? [...delegations, callA2aSpec(this.#remote?.entries() ?? [])] : delegations;
    }
    if (singleTurn(profile)) return [];
    const granted = (this.#servers()?.tools() ?? []).filter((tool) => this.#grants(profile, tool));
    return [
      ...granted.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })),
      FINISH_TASK_SPEC,
    ];
  }

  /** The agent may call this tool (offered, so a call of anything else is refused). */
  allows(profile: AgentProfile, tool: string): boolean {
    if (profile.role === "coordinator") return this.#specialists.has(tool) || this.callsRemote(tool);
    if (singleTurn(profile)) return false;
    if (tool === FINISH_TASK) return true;
    const served = this.#servers()?.tool(tool);
    return served !== undefined && this.#grants(profile, served);
  }

  /**
   * `tool` is `call_a2a`, a remote agent is known and no specialist has that name (a specialist
   * named `call_a2a` keeps it: the coordinator's tools never hold one name twice).
   */
  callsRemote(tool: string): boolean {
    return tool === CALL_A2A && !this.#specialists.has(tool) && (this.#remote?.entries().length ?? 0) > 0;
  }

  /** Only reads: engine control, or an MCP tool the catalog marks `mutating: false`. */
  readOnly(tool: string): boolean {
    if (tool === FINISH_TASK) return true;
    const served = this.#servers()?.tool(tool);
    const own = served?.tool ?? tool;
    const override = this.#workload.toolCatalog.tools.find((entry) => entry.name === own);
    return override?.mutating === false;
  }

  /** The MCP tool the workload's servers offer under its own name (the first server that has it). */
  servedByOwnName(tool: string): McpTool | undefined {
    return this.#servers()
      ?.tools()
      .find((served) => served.tool === tool);
  }

  /** The precondition the workload's catalog declares for a tool (its own name). */
  precondition(tool: string): Precondition | undefined {
    return this.#workload.toolCatalog.tools.find((entry) => entry.name === tool)?.precondition;
  }

  /** The MCP tool behind a model-facing name (its server's own name and input schema). */
  served(tool: string): McpTool | undefined {
    return this.#servers()?.tool(tool);
  }

  #grants(profile: AgentProfile, tool: McpTool): boolean {
    const allowlist = profile.specialist?.tools.mcp ?? "inherit";
    if (allowlist === "inherit") return this.#workload.toolCatalog.mcp.some((entry) => entry.server === tool.server);
    return allowlist.some(
      (grant: McpGrant) => grant.server === tool.server && (grant.tools?.includes(tool.tool) ?? true),
    );
  }
}

/** A SingleTurn specialist: one model call, never any tools. */
export function singleTurn(profile: AgentProfile): boolean {
  return profile.specialist?.mode === "SingleTurn";
}

/** A specialist's system prompt: its instruction, and the JSON Schema its reply must satisfy when it declares one. */
function specialistPrompt(specialist: Specialist): string {
  if (specialist.outputSchema === undefined) return specialist.instruction;
  return [
    specialist.instruction,
    "",
    "Answer with one JSON value only (no prose, no code fence) that satisfies this JSON Schema:",
    JSON.stringify(specialist.outputSchema.schema),
  ].join("\n");
}

function delegationSpec(profile: AgentProfile): ToolSpec {
  return {
    name: profile.name,
    description: profile.specialist?.description || `Delegate a task to the ${profile.name} specialist.`,
    inputSchema: {
      type: "object",
      properties: {
        request: { type: "string", description: "what the specialist should do, with the context it needs" },
      },
      required: ["request"],
    },
  };
}

function coordinatorPrompt(workload: Workload): string {
  const lines = [
    `You are ${workload.name}_coordinator, the coordinator of the ${workload.name} workload.${workload.description ? ` ${workload.description}` : ""}`,
  ];
  if (workload.roster.length > 0) {
    lines.push(
      "Delegate work by calling the tool named after a specialist with a request. Each specialist reports back its result.",
      "Changes a specialist proposes are held for an operator's approval before they run.",
    );
  }
  lines.push("When the incident is handled, answer with a short summary.");
  return lines.join("\n");
}
