/**
 * svc's A2A agent cards (A2A v0.3.0 AgentCard): the aggregated card lists every exposed workload
 * as a skill, a per-workload card names one; both advertise JSON-RPC at `<base>/a2a` as the
 * preferred transport, streaming, text in and out, and the bearer scheme when the listener has a
 * token. Cards are public; the base URL is the one the client used (its validated Host).
 */
import type { Workload } from "../workload/workload.ts";
import { A2A_PROTOCOL_VERSION, type AgentCard, type AgentSkill } from "../../protocols/a2a/a2a-wire.ts";

export interface CardOptions {
  /** The listener's base URL as the client reached it (`http://host:port`). */
  baseUrl: string;
  version: string;
  /** Whether `/a2a` wants a bearer (SVC_A2A_TOKEN set). */
  bearer: boolean;
}

/** The skill a workload exposes (its id is the workload's name, the selector of a send). */
export function workloadSkill(workload: Workload): AgentSkill {
  return {
    id: workload.name,
    name: workload.a2a.skillName,
    description: workload.a2a.skillDescription || workload.description || workload.name,
    tags: ["spar", "workload", workload.dispatch],
    inputModes: ["text/plain"],
    outputModes: ["text/plain"],
  };
}

function card(name: string, description: string, skills: AgentSkill[], options: CardOptions): AgentCard {
  return {
    protocolVersion: A2A_PROTOCOL_VERSION,
    name,
    description,
    url: `${options.baseUrl}/a2a`,
    preferredTransport: "JSONRPC",
    additionalInterfaces: [{ url: `${options.baseUrl}/a2a`, transport: "JSONRPC" }],
    version: options.version,
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills,
    ...(options.bearer
      ? {
          securitySchemes: {
            bearer: {
              type: "http",
              scheme: "bearer",
              bearerFormat: "SVC_A2A_TOKEN or an HS256 JWT signed with it",
            },
          },
          security: [{ bearer: [] }],
        }
      : {}),
  };
}

/** The card at `/.well-known/agent-card.json`: every exposed workload a skill. */
export function aggregatedCard(workloads: readonly Workload[], options: CardOptions): AgentCard {
  const names = workloads.map((workload) => workload.name).join(", ");
  return card(
    "spar svc",
    `spar workflow daemon serving ${names || "no workload"} over A2A`,
    workloads.map(workloadSkill),
    options,
  );
}

/** The card at `/.well-known/agent-card/<name>.json`. */
export function workloadCard(workload: Workload, options: CardOptions): AgentCard {
  return card(
    workload.name,
    workload.a2a.skillDescription || workload.description || workload.name,
    [workloadSkill(workload)],
    options,
  );
}
