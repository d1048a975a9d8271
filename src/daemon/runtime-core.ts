/**
 * The runtime core every spar daemon runs on (`spar agent` and `spar svc`): the session
 * store, the metrics registry and the runtime's metrics, the tool host and its tool servers,
 * memory and skills, the turn worker pool, pricing, auto-continue, the session host and the
 * SessionService, and the readiness checks. Owns no listener: each daemon adds its own on top and
 * runs the teardown in order with `beginShutdown()`, its listener's drain, then `close()` (D231).
 */
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import type { GuardrailConfig } from "../core/guardrails.ts";
import type { InboxCaps } from "../core/inbox-room.ts";
import type { ModelSpec } from "../core/model.ts";
import { AgentKnowledge, type KnowledgeSettings } from "../memory/agent-knowledge.ts";
import { ReloadRegistry } from "../memory/reload-registry.ts";
import { apiKeyEnvOf, isRemoteProvider, missingApiKey } from "../models/providers/provider-catalog.ts";
import { type AutoContinueSettings, AutoContinuer } from "../runtime/auto-continuer.ts";
import type { ExecutorFactory } from "../runtime/executor.ts";
import type { PermissionSettings } from "../runtime/gated-tools.ts";
import type { PricingTable } from "../runtime/pricing-table.ts";
import { SessionHost } from "../runtime/session-host.ts";
import { SessionService } from "../runtime/session-service.ts";
import { SessionRelay } from "../runtime/session-relay.ts";
import type { LeaseSettings } from "../runtime/lease-keeper.ts";
import type { SessionKey } from "../core/session-key.ts";
import { hostname } from "node:os";
import { uuidv7 } from "../core/ids.ts";
import { ToolHost } from "../runtime/tool-host.ts";
import { WorkerPool } from "../runtime/worker-pool.ts";
import { SkillAwareTools } from "../skills/skill-tools.ts";
import type { RemoteAgentDirectory } from "../a2a-client/remote-agent-directory.ts";
import { withRemoteAgents } from "../a2a-client/remote-agent-wiring.ts";
import type { ToolCatalog, ToolRunner } from "../core/tool-catalog.ts";
import type { FlushOn } from "../store/sqlite/group-commit.ts";
import { PostgresStore } from "../store/postgres/postgres-store.ts";
import { SqliteStore } from "../store/sqlite/sqlite-store.ts";
import type { AttachContext, CheckState } from "../surfaces/attach/attach-context.ts";
import type { Logger } from "../telemetry/logger.ts";
import { MetricsRegistry } from "../telemetry/metrics.ts";
import type { McpSettings } from "../cli/mcp-flags.ts";
import type { PricingSettings } from "../cli/pricing-flags.ts";
import {
  type CoreStore,
  mcpOption,
  readinessChecks,
  registerMcpReload,
  registerRuntimeGauges,
  startPricing,
  toolServerStarter,
  withServerExemptions,
} from "./runtime-core-parts.ts";
import type { ToolsSettings } from "../cli/tools-flags.ts";
import type { SubagentSpec } from "../core/subagents.ts";
import { withSubagentTools } from "../runtime/subagent-tools.ts";
import { withLoopControlTools } from "../runtime/loop-control-tools.ts";
import { withTriageTools } from "../runtime/triage-tools.ts";

/** What the core reads: each daemon maps its own configuration to this in one function. */
export interface RuntimeCoreSettings {
  /**
   * The session store. sqlite (the default driver): its path, size cap in MiB (0: no cap) and when
   * a tick's writes are committed (default `microtask`; `immediate` batches the writes of every
   * request handled in one event-loop turn into one transaction, svc's choice for bursts of
   * approvals, D255). postgres: its postgres:// URL and pool size (`--session-db-pool`, D515).
   */
  store:
    | { driver?: "sqlite"; path: string; maxMb: number; flushOn?: FlushOn; minCommitIntervalMs?: number }
    | {
        driver: "postgres";
        url: string;
        /** Connections the store opens (D515); absent: its default. */
        pool?: number;
        /**
         * Share the database with other daemons of this role (D487): sessions served under leases
         * of `leaseMs`; absent: the store holds the database alone (D261's writer lock).
         */
        shared?: {
          leaseMs: number;
          /** The app whose session of the same id carries a session's lease (D492); absent: its own. */
          leaseApp?: (app: string) => string;
          /** Told before anything runs under a lease just taken (D493). */
          taken?: (scope: SessionKey) => Promise<void>;
        };
      };
  workers: number;
  /** A turn worker running turns that leaves a ping unanswered this long is replaced. */
  workerLivenessMs: number;
  tools: ToolsSettings;
  /** Tool servers (mcp.json); undefined: none. */
  mcp: McpSettings | undefined;
  knowledge: KnowledgeSettings;
  permissions: PermissionSettings;
  guardrails: GuardrailConfig;
  model: ModelSpec;
  maxSteps: number;
  idleTimeoutMs: number;
  inbox: InboxCaps;
  /** The app sessions live under, and the agent's name in their records. */
  appName: string;
  agentName: string;
  multiSession: boolean;
  autoContinue: AutoContinueSettings;
  pricing: PricingSettings;
  /**
   * Variables holding the daemon's listener secrets (token variables): tool commands never see
   * them. The model's key variables are added by the core.
   */
  hiddenEnv: readonly string[];
  /** An execution still running this long after it started is cancelled; absent or 0: none. */
  turnDeadlineMs?: number;
  /** The root of the sessions' plan directories (D358); absent: `<tools root>/.agents/plans`. */
  plansDir?: string;
  /** The prefix of the core's metric names (D2): `spar` (default) for the agent, `svc` for svc. */
  metricPrefix?: string;
  /** What runs a session's work: absent, the agent's model turn; svc passes its workload's (D207). */
  executorFor?: ExecutorFactory;
  /** Remote A2A agents the model may call (`call_a2a`); absent: the tool is not offered. */
  remoteAgents?: RemoteAgentDirectory;
  /** Tools a daemon's own layer puts in front of the core's (the agent's `call_peer`, D364); absent: none. */
  frontTools?: (inner: ToolRunner & ToolCatalog) => ToolRunner & ToolCatalog;
  /** The configured subagents (D351); absent: none. */
  subagents?: readonly SubagentSpec[];
  /** The loop-control tools offered and scheduled wakes fired (D362): the agent's `--wake-loop`; absent: off (svc). */
  wakeLoop?: boolean;
  /** Told the core's parts before the session host starts (before any inbox left by a crash drains). */
  beforeStart?: (
    parts: Pick<RuntimeCore, "sessions" | "store" | "catalog" | "tools" | "metrics">,
  ) => void | Promise<void>;
}

/** What an attach listener takes from the runtime core, the same for the agent and svc's attach surface. */
export type CoreAttachParts = Pick<
  AttachContext,
  "pricing" | "tools" | "knowledge" | "metrics" | "mcp" | "subscriberBuffer"
>;

/**
 * The attach context's parts the core provides: prices, the tool catalog, memory and skills with
 * their reload, the metrics, the tool servers, and each subscriber's buffer (`--subscriber-buffer`,
 * `--subscriber-buffer-bytes`; its low-water mark a quarter of it, 8 to 256 frames).
 */
export function coreAttachParts(
  core: RuntimeCore,
  buffer: { subscriberBuffer: number; subscriberBufferBytes: number },
): CoreAttachParts {
  return {
    pricing: core.pricing,
    tools: core.catalog,
    knowledge: {
      memorySources: () => core.knowledge.memorySources(),
      skillRows: () => core.knowledge.skillRows(),
      reloads: core.reloads,
    },
    metrics: core.metrics,
    ...(core.tools.mcp ? { mcp: core.tools.mcp } : {}),
    subscriberBuffer: {
      maxQueued: buffer.subscriberBuffer,
      maxQueuedBytes: buffer.subscriberBufferBytes,
      lowWater: Math.min(256, Math.max(8, buffer.subscriberBuffer >> 2)),
    },
  };
}

export interface RuntimeCore {
  readonly store: CoreStore;
  readonly metrics: MetricsRegistry;
  readonly tools: ToolHost;
  /** The tools a turn sees: the tool host's, the skill tools and `call_a2a`. */
  readonly catalog: ToolRunner & ToolCatalog;
  readonly knowledge: AgentKnowledge;
  /** What a reload re-reads: memory, skills and the tool-server catalog. */
  readonly reloads: ReloadRegistry;
  readonly pool: WorkerPool;
  readonly pricing: PricingTable;
  readonly autoContinue: AutoContinuer;
  readonly host: SessionHost;
  readonly sessions: SessionService;
  /** Present when several daemons share the database: a daemon layer relays its own operations with it (D493). */
  readonly relay: SessionRelay | undefined;
  /** The readiness checks (`session_db`, `turn_workers`, `wake_loops`), logging each change of state. */
  checks(): Promise<Record<string, CheckState>>;
  /**
   * Before teardown (svc): refuse new work and let the turns in flight end by themselves for up to
   * `windowMs`; true when every one did. beginShutdown then cancels the rest.
   */
  drain(windowMs: number): Promise<boolean>;
  /** Teardown step 1: refuse new work and cancel every turn in flight; resolves when they are cancelled. */
  beginShutdown(): Promise<void>;
  /** The last teardown steps: the tool host and its children, the orderly stop, the workers and the store. */
  close(): Promise<void>;
}

/** The permission settings with the triage tools' view of the catalog (D465, D467), when they are configured. */
function withCatalogView(permissions: PermissionSettings, catalog: ToolCatalog): PermissionSettings {
  const triage = permissions.triage;
  return triage === undefined ? permissions : { ...permissions, triage: { ...triage, tools: () => catalog.list() } };
}

/** Open the store, start the workers and the session host; the caller owns the teardown. */
export async function startRuntimeCore(settings: RuntimeCoreSettings, logger: Logger): Promise<RuntimeCore> {
  warnWithoutApiKey(settings.model, logger);
  const daemonId = daemonRunId();
  const store = await openStore(settings.store, daemonId);
  const shared = settings.store.driver === "postgres" ? settings.store.shared : undefined;
  const metrics = new MetricsRegistry();
  const prefix = settings.metricPrefix ?? "spar";
  const countTurn = metrics.counter(`${prefix}_turns_total`, "Turns finished, by outcome.");
  const tools = new ToolHost(
    { ...settings.tools, hiddenEnv: hiddenVariables(settings) },
    { log: (message) => logger.error(message), ...mcpOption(settings.mcp, logger) },
  );
  // Memory and skills (the system prompt, the skill tools); a reload re-reads every registered part.
  const knowledge = new AgentKnowledge(settings.knowledge);
  for (const problem of knowledge.load()) logger.warn(problem);
  const reloads = new ReloadRegistry();
  knowledge.registerReloads(reloads);
  registerMcpReload(reloads, tools.mcp);
  const remote = withRemoteAgents(
    new SkillAwareTools(tools, knowledge.skills),
    settings.remoteAgents,
    settings.tools.outboundAllow,
  );
  const withSubagents = withSubagentTools(settings.frontTools?.(remote) ?? remote, settings.subagents ?? []);
  const looped = settings.wakeLoop ? withLoopControlTools(withSubagents) : withSubagents;
  const catalog = withTriageTools(looped, settings.permissions.triage);
  // D465, D467: the plan gate and wait_and_verify read the catalog as it is at each call.
  const permissions = withCatalogView(settings.permissions, catalog);
  const pool = new WorkerPool(settings.workers, {
    livenessMs: settings.workerLivenessMs,
    onFailure: (reason) => logger.error(`turn worker: ${reason}`),
    tools: () => catalog.specs(),
    system: () => knowledge.systemPrompt(),
  });
  const pricing = startPricing(settings.pricing, logger);
  const countRefused = metrics.counter(
    `${prefix}_turns_refused_total`,
    "Turns a guardrail-halted session refused, by guardrail.",
  );
  const autoContinue = new AutoContinuer(
    settings.autoContinue,
    store,
    () => new Date(),
    (message) => logger.info(message),
    daemonId,
  );
  const host = new SessionHost({
    store,
    pool,
    pricing,
    logger,
    autoContinue,
    prepareTools: toolServerStarter(tools, logger),
    turnEnded: (outcome) => countTurn({ outcome }),
    turnRefused: (guardrail) => countRefused({ guardrail }),
    toolSpecs: () => catalog.specs(),
    ...(settings.executorFor ? { executorFor: settings.executorFor } : {}),
    ...(store.cluster && shared ? { cluster: { cluster: store.cluster, lease: leaseSettings(shared) } } : {}),
    config: {
      permissions: { ...permissions, runner: catalog },
      guardrails: settings.guardrails,
      app: settings.appName,
      agentName: settings.agentName,
      multiSession: settings.multiSession,
      model: settings.model,
      maxSteps: settings.maxSteps,
      idleTimeoutMs: settings.idleTimeoutMs,
      inbox: settings.inbox,
      ...(settings.subagents ? { subagents: settings.subagents } : {}),
      ...(settings.turnDeadlineMs ? { turnDeadlineMs: settings.turnDeadlineMs } : {}),
      plansDir: settings.plansDir ?? join(settings.tools.root, ".agents", "plans"),
      digest: withServerExemptions(settings.tools.digest, tools.mcp),
      ...(settings.wakeLoop ? { wakeLoop: true } : {}),
    },
  });
  const sessions = new SessionService(host);
  const relay = store.cluster && shared ? new SessionRelay(host, store.cluster, logger) : undefined;
  if (relay) sessions.useRelay(relay);
  // A daemon's layer whose executors use the sessions binds them before any session runs.
  try {
    await settings.beforeStart?.({ sessions, store, catalog, tools, metrics });
    // The sweep finds sessions whose daemon died (D490) within 2 s, or a third of a shorter lease.
    await relay?.start(Math.max(50, Math.min(2_000, Math.floor((shared?.leaseMs ?? 0) / 3))));
    await host.start();
  } catch (error) {
    await relay?.stop();
    await host.close();
    throw error;
  }
  registerRuntimeGauges(metrics, { store, pool, host, autoContinue }, prefix);
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= closeCore(tools, host, logger, relay);
    return closing;
  };
  return {
    store,
    metrics,
    tools,
    catalog,
    knowledge,
    reloads,
    pool,
    pricing,
    autoContinue,
    host,
    sessions,
    relay,
    checks: readinessChecks(store, pool, host, logger),
    drain: (windowMs) => host.drain(windowMs),
    beginShutdown: () => host.beginShutdown(),
    close,
  };
}

/** How long leases last, and (D492) the session whose lease covers each session. */
function leaseSettings(shared: {
  leaseMs: number;
  leaseApp?: (app: string) => string;
  taken?: (scope: SessionKey) => Promise<void>;
}): LeaseSettings {
  const { leaseApp, taken } = shared;
  return {
    ttlMs: shared.leaseMs,
    ...(leaseApp === undefined ? {} : { scope: (key: SessionKey) => ({ app: leaseApp(key.app), id: key.id }) }),
    ...(taken === undefined ? {} : { taken }),
  };
}

/** This daemon run's name in the shared database's lease and command rows: host, pid and a unique suffix. */
function daemonRunId(): string {
  return `${hostname()}:${process.pid}:${uuidv7().slice(-12)}`;
}

async function openStore(settings: RuntimeCoreSettings["store"], daemonId: string): Promise<CoreStore> {
  if (settings.driver === "postgres")
    return await PostgresStore.open(settings.url, {
      ...(settings.pool === undefined ? {} : { maxConnections: settings.pool }),
      ...(settings.shared ? { shared: { daemonId, leaseApp: settings.shared.leaseApp } } : {}),
    });
  // Directories we create hold session text: the daemon's user only (existing ones are left as they are).
  mkdirSync(dirname(settings.path), { recursive: true, mode: 0o700 });
  // 4 KiB pages: 256 per MiB.
  return SqliteStore.open(settings.path, {
    ...(settings.maxMb > 0 ? { maxPageCount: settings.maxMb * 256 } : {}),
    ...(settings.flushOn === undefined ? {} : { flushOn: settings.flushOn }),
    ...(settings.minCommitIntervalMs === undefined ? {} : { minCommitIntervalMs: settings.minCommitIntervalMs }),
  });
}

async function closeCore(tools: ToolHost, host: SessionHost, logger: Logger, relay?: SessionRelay): Promise<void> {
  await relay?.stop();
  // Tool children (bash process groups) and tool-server child processes (SIGTERM, grace, SIGKILL, all at once): the tool host, which then stops.
  await tools.close();
  // An orderly stop: this run does not count toward the auto-continue crash-loop breaker.
  await host.autoContinue.end().catch((error: unknown) => logger.warn(`recording the orderly stop: ${String(error)}`));
  await host.close();
}

/**
 * A remote provider without its API key starts (reads, attach and the store still serve) but every
 * turn would fail at its first model call: say so at startup, naming the variable (D339).
 */
function warnWithoutApiKey(model: ModelSpec, logger: Logger): void {
  if (!isRemoteProvider(model.provider)) return;
  const missing = missingApiKey(model.provider, model.apiKeyEnv, process.env);
  if (missing !== undefined)
    logger.warn(`${missing}: every turn will fail (auth_error) until the daemon is started with it set`);
}

/** Variables that hold the daemon's own secrets: tool commands never see them. */
function hiddenVariables(settings: RuntimeCoreSettings): string[] {
  const names = [...settings.hiddenEnv, settings.model.apiKeyEnv];
  if (isRemoteProvider(settings.model.provider))
    names.push(apiKeyEnvOf(settings.model.provider, settings.model.apiKeyEnv));
  return [...new Set(names.filter((name): name is string => name !== undefined))];
}
