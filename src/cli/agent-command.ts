/**
 * `spar agent`: the agent daemon. Builds the configuration, opens and locks the session store,
 * starts the turn workers, the session host and the attach listener, and on SIGTERM runs the
 * spec's teardown in order before exiting 0.
 */
import { AutoContinuer } from "../runtime/auto-continuer.ts";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { SparError } from "../core/errors.ts";
import { PricingTable } from "../runtime/pricing-table.ts";
import { SessionHost } from "../runtime/session-host.ts";
import { SessionService } from "../runtime/session-service.ts";
import { ToolHost } from "../runtime/tool-host.ts";
import { McpManager } from "../mcp/mcp-manager.ts";
import { loadCatalogFile } from "./mcp-flags.ts";
import { AgentKnowledge } from "../memory/agent-knowledge.ts";
import { ReloadRegistry } from "../memory/reload-registry.ts";
import { scanSkills } from "../skills/skill-library.ts";
import { SkillAwareTools } from "../skills/skill-tools.ts";
import { apiKeyEnvOf, isRemoteProvider } from "../models/providers/provider-catalog.ts";
import { WorkerPool } from "../runtime/worker-pool.ts";
import { SqliteStore } from "../store/sqlite/sqlite-store.ts";
import type { AttachContext, CheckState } from "../surfaces/attach/attach-context.ts";
import { type AttachServer, startAttachServer } from "../surfaces/attach/attach-server.ts";
import { type CallerAuthConfig, resolveCaller } from "../surfaces/http/caller-auth.ts";
import { type HostAllowlist, parseAllowedHosts } from "../surfaces/http/host-allowlist.ts";
import { StreamAdmission } from "../surfaces/http/stream-admission.ts";
import { PeerHub } from "../surfaces/peers/peer-hub.ts";
import { redactUrl } from "../net/redact-url.ts";
import { type Logger, createLogger } from "../telemetry/logger.ts";
import { MetricsRegistry } from "../telemetry/metrics.ts";
import { type AgentConfig, buildAgentConfig } from "./agent-config.ts";
import { AGENT_FLAGS } from "./agent-flags.ts";
import { loadAuthTable } from "./auth-table.ts";
import { defaultConfigPath, loadConfigFile } from "../config/config-file.ts";
import { parseFlags, renderHelp } from "../config/flag-parser.ts";
import { bindHostname, isLoopbackHost } from "./listen-address.ts";
import { SPAR_VERSION } from "./version.ts";

const USAGE = "spar agent [--attach-listen=HOST:PORT] [--session-db=PATH] [--model=echo|scripted] [flags]";
const SUMMARY =
  "Runs the agent daemon: durable sessions, the attach listener (HTTP + SSE) and turn workers.\n" +
  "Example: spar agent --attach-listen=127.0.0.1:7777 --session-db=.agents/state/sessions.db --model=echo";

export interface RunningAgent {
  config: AgentConfig;
  server: AttachServer;
  host: SessionHost;
  /** The SIGTERM path: teardown in order; resolves when done. */
  shutdown(): Promise<void>;
}

export async function agentCommand(argv: readonly string[]): Promise<number> {
  const flags = parseFlags(AGENT_FLAGS, argv);
  if (!flags.ok) return usageError(flags.error);
  if (flags.value.help) {
    process.stdout.write(renderHelp(USAGE, SUMMARY, AGENT_FLAGS));
    return 0;
  }
  if (flags.value.positionals.length > 0)
    return usageError(`unexpected argument ${JSON.stringify(flags.value.positionals[0])}`);
  const cwd = process.cwd();
  const configFlag = flags.value.values.get("config");
  const file = loadConfigFile(typeof configFlag === "string" ? configFlag : defaultConfigPath(cwd));
  if (!file.ok) return usageError(file.error);
  const config = buildAgentConfig(flags.value.values, file.value, cwd, navigator.hardwareConcurrency);
  if (!config.ok) return usageError(config.error);
  const logger = createLogger(config.value.logLevel);
  const unread = file.value.unread();
  if (unread.length > 0)
    logger.warn(
      `config file ${configPathShown(configFlag, cwd)}: ignoring key(s) this configuration does not read: ${unread.join(", ")}`,
    );
  let agent: RunningAgent;
  try {
    agent = await startAgent(config.value, logger);
  } catch (error) {
    logger.error(`spar agent failed to start: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
  return await new Promise<number>((resolve) => {
    process.once("SIGTERM", () => {
      logger.info("SIGTERM: shutting down");
      agent.shutdown().then(
        () => resolve(0),
        (error: unknown) => {
          logger.error(`shutdown failed: ${String(error)}`);
          resolve(1);
        },
      );
    });
  });
}

function usageError(message: string): number {
  process.stderr.write(`spar agent: ${redactUrl(message)}\n`);
  return 2;
}

/** Start every part of the daemon; the caller owns the shutdown. */
/** The shared bearer token from the variable `--attach-token` names; unset or empty is an error. */
function resolveToken(config: AgentConfig, env: Record<string, string | undefined>): string | undefined {
  if (config.tokenEnv === undefined) return undefined;
  const token = env[config.tokenEnv];
  if (token === undefined || token.trim() === "") {
    throw new SparError(
      "bad_request",
      `--attach-token names the environment variable ${config.tokenEnv}, which is not set or empty`,
    );
  }
  return token;
}

/** The per-caller layer: anonymous single-user mode, or the token table of multi-session auth. */
function callerAuth(config: AgentConfig, env: Record<string, string | undefined>): CallerAuthConfig {
  const settings = config.callerAuth;
  if (!settings) {
    return {
      tokens: undefined,
      adminIdentities: new Set(),
      proxyIdentities: new Set(),
      assertableIdentities: new Set(),
      proxyMayAssertAdmins: false,
      allowAnonymous: true,
      proxyHeader: "x-asserted-caller",
    };
  }
  if (!config.multiSession)
    throw new SparError("bad_request", "--auth-table (attach.multi_session.auth.table_file) needs --multi-session");
  const tokens = loadAuthTable(settings.tableFile, env);
  if (!tokens.ok) throw new SparError("bad_request", tokens.error);
  return {
    tokens: tokens.value,
    adminIdentities: new Set(settings.adminIdentities),
    proxyIdentities: new Set(settings.proxyIdentities),
    assertableIdentities: new Set(settings.assertableIdentities),
    proxyMayAssertAdmins: settings.proxyMayAssertAdmins,
    allowAnonymous: settings.allowAnonymous,
    proxyHeader: settings.proxyHeader.toLowerCase(),
  };
}

/** Whether every request must authenticate: a token, client certificates, or callers without anonymous access. */
function hasAuthenticationGate(config: AgentConfig, token: string | undefined, callers: CallerAuthConfig): boolean {
  return (
    token !== undefined || config.tls?.ca !== undefined || (callers.tokens !== undefined && !callers.allowAnonymous)
  );
}

/**
 * Startup policy: a listener reachable from other hosts needs an authentication gate. Without
 * one, the listener serves only loopback Host names and the configured ones (DNS rebinding).
 */
function checkListenPolicy(
  config: AgentConfig,
  token: string | undefined,
  callers: CallerAuthConfig,
  logger: Logger,
): HostAllowlist | undefined {
  if (hasAuthenticationGate(config, token, callers)) return undefined;
  const allowed = parseAllowedHosts(config.limits.allowedHosts, "--attach-allowed-hosts (attach.allowed_hosts)");
  if (!allowed.ok) throw new SparError("bad_request", allowed.error);
  if (!isLoopbackHost(config.listen.host)) {
    throw new SparError(
      "bad_request",
      `refusing to listen on ${config.listen.host || "every interface"}:${config.listen.port} without an authentication gate: set --attach-token=<ENV VAR holding a token>, or bind a loopback address such as 127.0.0.1:${config.listen.port}`,
    );
  }
  logger.warn(
    `attach listener on ${config.listen.host}:${config.listen.port} has no token: any local process can drive these sessions (set --attach-token)`,
  );
  return allowed.value;
}

export async function startAgent(
  config: AgentConfig,
  logger: Logger,
  env: Record<string, string | undefined> = process.env,
): Promise<RunningAgent> {
  const token = resolveToken(config, env);
  const callers = callerAuth(config, env);
  const allowedHosts = checkListenPolicy(config, token, callers, logger);
  const peerHub = openPeerHub(config, logger);
  // Directories we create hold session text: the daemon's user only (existing ones are left as they are).
  mkdirSync(dirname(config.sessionDb), { recursive: true, mode: 0o700 });
  // 4 KiB pages: 256 per MiB.
  const store = SqliteStore.open(
    config.sessionDb,
    config.sessionDbMaxMb > 0 ? { maxPageCount: config.sessionDbMaxMb * 256 } : {},
  );
  const metrics = new MetricsRegistry();
  const countStreamRefused = metrics.counter(
    "spar_sse_streams_refused_total",
    "Event streams refused before they opened, by the cap that refused them (caller_cap, global_cap).",
  );
  const streams = new StreamAdmission(config.limits.streams, (cap) => countStreamRefused({ cap }));
  const countTurn = metrics.counter("spar_turns_total", "Turns finished, by outcome.");
  const tools = new ToolHost(
    { ...config.tools, hiddenEnv: daemonSecretVariables(config) },
    { log: (message) => logger.error(message), ...mcpOption(config, logger) },
  );
  // Memory and skills (the system prompt, the skill tools); POST /reload re-reads every registered part.
  const knowledge = new AgentKnowledge(config.knowledge);
  for (const problem of knowledge.load()) logger.warn(problem);
  const reloads = new ReloadRegistry();
  knowledge.registerReloads(reloads);
  registerMcpReload(reloads, tools.mcp);
  const catalog = new SkillAwareTools(tools, knowledge.skills);
  const pool = new WorkerPool(config.workers, {
    livenessMs: config.workerLivenessMs,
    onFailure: (reason) => logger.error(`turn worker: ${reason}`),
    tools: () => catalog.specs(),
    system: () => knowledge.systemPrompt(),
  });
  const pricing = startPricing(config, logger);
  const countRefused = metrics.counter(
    "spar_turns_refused_total",
    "Turns a guardrail-halted session refused, by guardrail.",
  );
  const autoContinue = new AutoContinuer(
    config.autoContinue,
    store,
    () => new Date(),
    (message) => logger.info(message),
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
    config: {
      permissions: { ...config.permissions, runner: catalog },
      guardrails: config.guardrails,
      app: config.appName,
      agentName: config.appName,
      multiSession: config.multiSession,
      model: config.model,
      maxSteps: config.maxSteps,
      idleTimeoutMs: config.idleTimeoutMs,
      inbox: config.limits.inbox,
    },
  });
  try {
    await host.start();
  } catch (error) {
    await host.close();
    throw error;
  }
  const context: AttachContext = {
    sessions: new SessionService(host),
    daemon: {
      name: config.agentCard.name,
      version: SPAR_VERSION,
      description: config.agentCard.description ?? "spar agent daemon",
      model: config.model.name,
      provider: config.model.provider,
      costCeiling: config.guardrails.maxTurnUsd > 0 || config.guardrails.maxSessionUsd > 0,
    },
    caller: (request, peer) => resolveCaller(request, callers, token, peer),
    checks: checkTransitions(
      async () => ({
        ...(await storeCheck(store)),
        turn_workers: pool.healthy ? "ready" : "failed",
        wake_loops: host.wakeLoopsFailed() ? "failed" : "ready",
      }),
      logger,
    ),
    heartbeatMs: config.heartbeatMs,
    idleTimeoutSeconds: config.limits.idleTimeoutSeconds,
    transport: {
      token,
      readonly: config.readonly,
      ...(allowedHosts ? { allowedHosts } : {}),
      ...(config.limits.trustedProxies.length > 0 ? { trustedProxies: config.limits.trustedProxies } : {}),
    },
    streams,
    identitiesRequired: callers.tokens !== undefined,
    agentCard: {
      settings: () => config.agentCard,
      options: {
        bearer: token !== undefined,
        mtls: config.tls?.ca !== undefined,
        skills: () => cardSkills(config.knowledge.skillsDir),
      },
    },
    ...(peerHub ? { peerHub } : {}),
    pricing,
    tools: catalog,
    knowledge: { memorySources: () => knowledge.memorySources(), skillRows: () => knowledge.skillRows(), reloads },
    metrics,
    ...(tools.mcp ? { mcp: tools.mcp } : {}),
    subscriberBuffer: {
      maxQueued: config.subscriberBuffer,
      maxQueuedBytes: config.subscriberBufferBytes,
      lowWater: Math.min(256, Math.max(8, config.subscriberBuffer >> 2)),
    },
  };
  metrics.gauge(
    "spar_auto_continue_redriven",
    "Interrupted turns auto-continue re-drove in this run.",
    () => autoContinue.stats.redriven,
  );
  metrics.gauge(
    "spar_auto_continue_refused",
    "Re-drives auto-continue refused in this run (a guard or another daemon's claim).",
    () => autoContinue.stats.refused,
  );
  metrics.gauge("spar_sse_stream_callers", "Callers holding at least one open event stream.", () => streams.callers);
  metrics.gauge(
    "spar_sse_stream_cap",
    "Event streams the daemon holds open at most (--attach-max-streams).",
    () => config.limits.streams.maxStreams,
  );
  metrics.gauge("spar_feed_subscribers", "Subscribers attached to session feeds.", () => host.subscriberCount);
  metrics.gauge(
    "spar_sessions_live",
    "Sessions held in memory (the rest are idle in the store).",
    () => host.liveCount,
  );
  metrics.gauge(
    "spar_worker_cached_messages",
    "Conversation messages the turn workers keep between turns (evicted sessions' are dropped).",
    () => pool.cachedMessages,
  );
  metrics.gauge("spar_store_commits", "Group-commit transactions since start.", () => store.stats.transactions);
  metrics.gauge("spar_store_refused_writes", "Writes the store refused since start.", () => store.stats.refused);
  metrics.gauge("spar_store_event_rows", "Event rows committed since start.", () => store.stats.rows);
  metrics.gauge(
    "spar_store_longest_write_ms",
    "Longest time one group commit held the event loop (ms).",
    () => store.stats.longestBatchMs,
  );
  const shownHost = bindHostname(config.listen).includes(":")
    ? `[${bindHostname(config.listen)}]`
    : bindHostname(config.listen);
  let server: AttachServer;
  try {
    server = await startAttachServer(context, bindHostname(config.listen), config.listen.port, config.tls);
  } catch (error) {
    // Bun's own text ("Is port 0 in use?") misleads for a name that does not resolve or an address not on this host.
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `--attach-listen=${shownHost}:${config.listen.port}: cannot listen there: the port is taken, or the host is not an address of this machine (${reason})`,
    );
  }
  if (config.tls?.ca !== undefined)
    logger.info("mTLS: each client is verified at the handshake and its requests served in process; no inner port");
  logger.info(
    `spar agent ${SPAR_VERSION} listening on ${config.tls ? "https" : "http"}://${shownHost}:${server.port} (model ${config.model.name}, store ${config.sessionDb}, ${pool.size} turn workers)`,
  );
  if (tools.mcp)
    logger.info(
      `tool servers: ${tools.mcp.rows().length} in ${tools.mcp.path}; each starts on first use (a turn or a /tools read)`,
    );
  let stopping: Promise<void> | undefined;
  const shutdown = () => {
    stopping ??= teardown(host, server, config, logger, peerHub, tools);
    return stopping;
  };
  return { config, server, host, shutdown };
}

/** The card's bundle skills, re-read on every card fetch (spec); a bad bundle is left out. */
function cardSkills(dir: string): Array<{ id: string; name: string; description: string }> {
  return scanSkills(dir).skills.map((skill) => ({ id: skill.name, name: skill.name, description: skill.description }));
}

/**
 * Before each turn: start (or retry, per --mcp-retry-interval) the tool servers not listed yet,
 * and log each server's outcome once per change.
 */
function toolServerStarter(tools: ToolHost, logger: Logger): () => Promise<void> {
  const reported = new Map<string, string>();
  return async () => {
    const mcp = tools.mcp;
    if (!mcp) return;
    await mcp.discover({ retry: true });
    for (const row of mcp.rows()) {
      const line =
        row.status === "failed"
          ? `failed: ${row.error ?? "did not start"}`
          : `${row.status}, ${row.tools?.length ?? 0} tools`;
      if (row.status === "idle" || row.status === "starting" || reported.get(row.name) === line) continue;
      reported.set(row.name, line);
      (row.status === "failed" ? logger.warn : logger.info)(`tool server ${row.name}: ${line}`);
    }
  };
}

/** Tool servers from mcp.json (not under echo); each starts on first use (D122). */
function mcpOption(config: AgentConfig, logger: Logger): { mcp?: McpManager } {
  const settings = config.mcp;
  if (settings?.catalog === undefined) return {};
  logger.info(
    `tool servers: ${settings.catalog.servers.map((server) => `${server.name} (${server.transport})`).join(", ")} from ${settings.path}`,
  );
  return {
    mcp: new McpManager(settings.catalog, settings.timeouts, () => loadCatalogFile(settings.path, settings.required)),
  };
}

/** POST /reload's `mcp` part: re-read mcp.json, stop changed and removed servers, start new ones. */
function registerMcpReload(reloads: ReloadRegistry, mcp: McpManager | undefined): void {
  if (!mcp) return;
  reloads.register("mcp", async () => {
    const result = await mcp.reload();
    return { count: result.servers.length, errors: result.errors };
  });
}

/** Variables that hold the daemon's own secrets: tool commands never see them. */
function daemonSecretVariables(config: AgentConfig): string[] {
  const names = [config.tokenEnv, config.model.apiKeyEnv];
  if (isRemoteProvider(config.model.provider)) names.push(apiKeyEnvOf(config.model.provider, config.model.apiKeyEnv));
  return [...new Set(names.filter((name): name is string => name !== undefined))];
}

/** The price list: shipped rates, the configured source (refreshed once in the background at start). */
function startPricing(config: AgentConfig, logger: Logger): PricingTable {
  const pricing = new PricingTable(config.pricing.source ? { source: config.pricing.source } : {});
  if (config.pricing.source && config.pricing.refreshOnStart) {
    void pricing.refresh().then((result) => {
      const line = `pricing refresh at start: ${result.updated} models updated, ${result.known_models} known`;
      if (result.detail?.startsWith("refresh failed")) logger.warn(`pricing refresh at start: ${result.detail}`);
      else logger.info(result.detail ? `${line}; ${result.detail}` : line);
    });
  }
  return pricing;
}

function openPeerHub(config: AgentConfig, logger: Logger): PeerHub | undefined {
  if (!config.peerHub.enabled) return undefined;
  const opened = PeerHub.open({ stateFile: config.peerHub.stateFile, log: logger, limits: config.peerHub.limits });
  if (!opened.ok) throw new SparError("bad_request", opened.error);
  opened.value.startPruning();
  return opened.value;
}

async function teardown(
  host: SessionHost,
  server: AttachServer,
  config: AgentConfig,
  logger: Logger,
  peerHub: PeerHub | undefined,
  tools: ToolHost,
): Promise<void> {
  const cancel = host.beginShutdown();
  // Teardown step 1, the peer hub: every change is already on disk; stop its prune timer.
  peerHub?.close();
  await Promise.race([cancel, new Promise((resolve) => setTimeout(resolve, 2000))]);
  await server.drain(config.shutdownTimeoutMs);
  // Tool children (bash process groups) and tool-server child processes (SIGTERM, grace, SIGKILL, all at once): the tool host, which then stops.
  await tools.close();
  // An orderly stop: this run does not count toward the auto-continue crash-loop breaker.
  await host.autoContinue.end().catch((error: unknown) => logger.warn(`recording the orderly stop: ${String(error)}`));
  await host.close();
  logger.info("shutdown complete");
}

/** Readiness checks that log one line per state change (the /healthz body carries no detail). */
function checkTransitions(
  run: () => Promise<Record<string, CheckState>>,
  logger: Logger,
): () => Promise<Record<string, CheckState>> {
  const last = new Map<string, CheckState>();
  return async () => {
    const checks = await run();
    for (const [name, state] of Object.entries(checks)) {
      const previous = last.get(name);
      if (previous !== undefined && previous !== state)
        (state === "ready" ? logger.info : logger.warn)(`readiness check ${name}: ${previous} -> ${state}`);
      last.set(name, state);
    }
    return checks;
  };
}

/** The session_db check: a bounded read against the event-log table (2 s, else `timeout`). */
async function storeCheck(store: SqliteStore): Promise<Record<string, CheckState>> {
  const timeout = new Promise<CheckState>((resolve) => setTimeout(() => resolve("timeout"), 2000).unref());
  const probe = store.probe().then(
    (): CheckState => "ready",
    (): CheckState => "failed",
  );
  return { session_db: await Promise.race([probe, timeout]) };
}

function configPathShown(configFlag: unknown, cwd: string): string {
  return typeof configFlag === "string" ? configFlag : (defaultConfigPath(cwd) ?? "(none)");
}
