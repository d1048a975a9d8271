/**
 * What the attach surface needs from the daemon: the session host, the daemon's identity for
 * capabilities, the caller resolver, and the health checks. Built by the agent command.
 */
import type { PricingTable } from "../../runtime/pricing-table.ts";
import type { SessionService } from "../../runtime/session-service.ts";
import type { ToolCatalog } from "../../core/tool-catalog.ts";
import type { MetricsRegistry } from "../../telemetry/metrics.ts";
import type { TransportPolicy } from "../http/request-guards.ts";
import type { AllowedOrigins } from "../http/cors-policy.ts";
import type { UiSettings } from "./ui-routes.ts";
import type { StreamAdmission } from "../http/stream-admission.ts";
import type { PeerHub } from "../peers/peer-hub.ts";
import type { AgentCardOptions } from "./agent-card.ts";
import type { AgentCardSettings } from "./agent-card-config.ts";
import type { McpManager } from "../../mcp/mcp-manager.ts";
import type { ReloadRegistry } from "../../memory/reload-registry.ts";

export type { Caller } from "../http/caller-auth.ts";
import type { Caller } from "../http/caller-auth.ts";

export interface DaemonInfo {
  name: string;
  version: string;
  description: string;
  model: string;
  provider: string;
  /** A cost ceiling is configured (the capabilities frame's `cost_ceiling` feature). */
  costCeiling: boolean;
}

/** What the knowledge routes read (GET /memory, GET /skills, POST /reload): built by the agent command from AgentKnowledge. */
export interface KnowledgeProvider {
  memorySources(): Array<{ scope: string; path: string; bytes: number }>;
  skillRows(): Array<{ name: string; description: string }>;
  reloads: ReloadRegistry;
}

export type CheckState = "ready" | "failed" | "timeout";

export interface AttachContext {
  /** Every session operation: authorize, refuse while draining, find the actor. */
  sessions: SessionService;
  daemon: DaemonInfo;
  /** The request's caller (per-caller layer); throws a 401 problem when it cannot be resolved. */
  caller(request: Request, peer?: string): Caller;
  /** Readiness checks by subsystem; the status is 503 when any is not ready. */
  checks(): Promise<Record<string, CheckState>>;
  /** Frames a subscriber may lag before it is cut, and the replay pacing mark. */
  subscriberBuffer: { maxQueued: number; maxQueuedBytes?: number; lowWater: number };
  /**
   * A connection that sends nothing for this long is closed (an idle keep-alive connection, a
   * stalled body); event streams and model-bound calls lift it for their request. Default 60.
   */
  idleTimeoutSeconds?: number;
  /** Interval of the `: ping` comment on every open stream. */
  heartbeatMs: number;
  metrics: MetricsRegistry;
  /** Open-stream caps (/events, /perms/stream): admit before a stream opens, release on close. */
  streams: StreamAdmission;
  /** Transport-layer authentication and read-only mode. */
  transport: TransportPolicy;
  /** The peer registry, when launched with --attach-peer-hub. */
  peerHub?: PeerHub;
  /** Multi-session auth is on: peer routes refuse anonymous callers. */
  identitiesRequired: boolean;
  /** The agent card's settings (re-read on every fetch) and how it describes auth and skills. */
  agentCard?: { settings: () => AgentCardSettings | undefined; options: AgentCardOptions };
  /** The daemon's price list (GET /pricing, /pricing/set, /pricing/refresh). */
  pricing?: PricingTable;
  /** The tools sessions have (GET /tools); absent: none. */
  tools?: ToolCatalog;
  /** The tool servers of mcp.json (GET /mcp, the `mcp` feature); absent: none loaded. */
  mcp?: McpManager;
  /** The embedded dashboard (`--ui-dir`): `/ui/*` and `GET /config`; absent: neither route exists. */
  ui?: UiSettings;
  /** Browser origins allowed cross-origin (`--attach-cors-origins`, D371); absent or empty: none. */
  corsOrigins?: AllowedOrigins;
  /** Memory and skills (GET /memory, GET /skills) and the POST /reload registry; absent: zero bodies. */
  knowledge?: KnowledgeProvider;
}
