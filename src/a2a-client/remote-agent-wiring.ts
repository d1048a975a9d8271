/**
 * How a daemon puts `call_a2a` in front of its tools: the directory of remote agents it was
 * given, an A2A client per call on an outbound guard carrying the operator's `outbound.allow`
 * (the one allow list fetch_url uses) plus, for an agent the operator declared in a file, that
 * declaration's own hosts (a name entry never opens link-local or metadata addresses, and such a
 * literal is not added), and the decorator. Without a directory the tools are unchanged.
 * Also the mapping of svc's `a2a/*.yaml` declarations (workload RemoteAgent) to directory entries.
 */
import type { ToolCatalog, ToolRunner } from "../core/tool-catalog.ts";
import { type OutboundAllowList, declaredHostEntry, parseOutboundAllowList } from "../net/outbound-allow-list.ts";
import { OutboundGuard } from "../net/outbound-guard.ts";
import { A2aClient } from "./a2a-client.ts";
import { RemoteAgentCaller, RemoteAgentTools } from "./call-a2a-tool.ts";
import {
  DEFAULT_REMOTE_TIMEOUT_MS,
  type RemoteAgentDirectory,
  type RemoteAgentEntry,
  staticDirectory,
} from "./remote-agent-directory.ts";

/** An `a2a/*.yaml` declaration as the workload loader parsed it. */
export interface DeclaredRemoteAgent {
  name: string;
  agentCardUrl?: string;
  endpoint?: string;
  skills: string[];
  auth?: { type: string; tokenEnv?: string };
  timeoutSeconds?: number;
  file: string;
}

/** A declaration as a directory entry: its endpoint wins over its card; skills describe it. */
export function declaredEntry(agent: DeclaredRemoteAgent): RemoteAgentEntry {
  return {
    name: agent.name,
    ...(agent.endpoint === undefined ? {} : { endpoint: agent.endpoint }),
    ...(agent.agentCardUrl === undefined ? {} : { cardUrl: agent.agentCardUrl }),
    description: agent.skills.length > 0 ? `skills: ${agent.skills.join(", ")}` : "a remote A2A agent",
    ...(agent.auth === undefined ? {} : { auth: agent.auth }),
    timeoutMs:
      agent.timeoutSeconds !== undefined && agent.timeoutSeconds > 0
        ? agent.timeoutSeconds * 1000
        : DEFAULT_REMOTE_TIMEOUT_MS,
    source: agent.file,
    declared: true,
  };
}

/** The declared agents as a directory; undefined when there are none (the tool is not offered). */
export function declaredDirectory(agents: readonly DeclaredRemoteAgent[]): RemoteAgentDirectory | undefined {
  return agents.length === 0 ? undefined : staticDirectory(agents.map(declaredEntry));
}

/**
 * The operator's allow list, plus a declared agent's own hosts (none for an agent from the hub,
 * or for the off-origin guard: `agent` undefined). The client sends to those hosts only on the
 * agent's own origins (a2a-client.ts, D332).
 */
export function agentAllowList(operator: readonly string[], agent: RemoteAgentEntry | undefined): OutboundAllowList {
  const own = agent?.declared ? [declaredHostEntry(agent.endpoint), declaredHostEntry(agent.cardUrl)] : [];
  const entries = [...operator, ...own.filter((entry): entry is string => entry !== undefined)];
  const parsed = parseOutboundAllowList(entries);
  if (parsed.ok) return parsed.value;
  // A declared host the list cannot hold (an odd name) opens nothing more; the operator's list was validated.
  const fallback = parseOutboundAllowList(operator);
  if (!fallback.ok) throw new Error(fallback.error);
  return fallback.value;
}

/** `inner` with `call_a2a` in front when a directory is given. `outboundAllow` was validated at startup. */
export function withRemoteAgents<T extends ToolRunner & ToolCatalog>(
  inner: T,
  directory: RemoteAgentDirectory | undefined,
  outboundAllow: readonly string[],
): T | RemoteAgentTools {
  if (directory === undefined) return inner;
  return new RemoteAgentTools(inner, new RemoteAgentCaller(directory, remoteAgentClients(outboundAllow)));
}

/**
 * The client an agent is called with: its guard opens the operator's list and the declared
 * agent's own hosts, used on the agent's own origin; an endpoint its card names elsewhere gets the
 * operator's list alone (D332).
 */
export function remoteAgentClients(outboundAllow: readonly string[]): (agent: RemoteAgentEntry) => A2aClient {
  const operatorOnly = new OutboundGuard({ allow: agentAllowList(outboundAllow, undefined) });
  return (agent) =>
    new A2aClient(new OutboundGuard({ allow: agentAllowList(outboundAllow, agent) }), { offOriginGuard: operatorOnly });
}
