/**
 * The agent daemon, composed: the runtime core both daemons share (src/daemon/runtime-core.ts:
 * the store, the turn workers, the session host) and the agent's own layer on it (caller auth,
 * the listen policy, the peer hub, the attach listener), and the teardown in the order the
 * attach API promises (docs/agent.md). Takes a built configuration; parses nothing.
 */
import { type UiAuthMode, browserParts } from "../surfaces/attach/ui-routes.ts";
import { SparError } from "../core/errors.ts";
import { scanSkills } from "../skills/skill-library.ts";
import type { AttachContext } from "../surfaces/attach/attach-context.ts";
import { type AttachServer, startAttachServer } from "../surfaces/attach/attach-server.ts";
import { type CallerAuthConfig, resolveCaller } from "../surfaces/http/caller-auth.ts";
import { type HostAllowlist, parseAllowedHosts } from "../surfaces/http/host-allowlist.ts";
import { PeerHub } from "../surfaces/peers/peer-hub.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { TelemetryHandle } from "../telemetry/telemetry.ts";
import type { SessionHost } from "../runtime/session-host.ts";
import type { AgentConfig, CallerAuthSettings } from "../cli/agent-config.ts";
import { admitStreams } from "../daemon/attach-stream-admission.ts";
import { loadAuthTable } from "./auth-table.ts";
import { bindHostname, isLoopbackHost } from "../config/listen-address.ts";
import { agentRemoteAgents } from "./agent-remote-agents.ts";
import { checkPeerRegistration, peerCallTools, startPeerRegistrar } from "./agent-peer-clients.ts";
import { alertFrontTools } from "../alerts/alert-tool.ts";
import type { PeerRegistrar } from "../peers-client/peer-registrar.ts";
import {
  type RuntimeCore,
  type RuntimeCoreSettings,
  coreAttachParts,
  startRuntimeCore,
} from "../daemon/runtime-core.ts";
import { SPAR_VERSION } from "../daemon/version.ts";
import { redactUrl } from "../net/redact-url.ts";

export interface RunningAgent {
  config: AgentConfig;
  server: AttachServer;
  host: SessionHost;
  /** The SIGTERM path: teardown in order; resolves when done. */
  shutdown(): Promise<void>;
}

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

/**
 * The per-caller layer: anonymous single-user mode, or callers told apart by the token table of
 * multi-session auth, by client certificates, or both (D330).
 */
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
  return { ...perCallerAuth(settings), tokens: callerTokens(config, settings.tableFile, env) };
}

/**
 * The bearer tokens that name callers: the caller table's, or none at all when client
 * certificates alone name them (D330: a bearer that is not the transport token is then unknown).
 */
function callerTokens(
  config: AgentConfig,
  tableFile: string | undefined,
  env: Record<string, string | undefined>,
): Map<string, string> {
  if (tableFile === undefined) return new Map();
  if (!config.multiSession)
    throw new SparError("bad_request", "--auth-table (attach.multi_session.auth.table_file) needs --multi-session");
  const tokens = loadAuthTable(tableFile, env);
  if (!tokens.ok) throw new SparError("bad_request", tokens.error);
  return tokens.value;
}

function perCallerAuth(settings: CallerAuthSettings): Omit<CallerAuthConfig, "tokens"> {
  return {
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

/** How the listener authenticates, as the dashboard's descriptor names it (GET /config, D370). */
function uiAuthMode(config: AgentConfig, token: string | undefined, callers: CallerAuthConfig): UiAuthMode {
  if (config.tls?.ca !== undefined) return "mtls";
  return token !== undefined || callers.tokens !== undefined ? "bearer" : "none";
}

/** Start every part of the daemon; the caller owns the shutdown (which ends with the telemetry flush). */
export async function startAgent(
  config: AgentConfig,
  logger: Logger,
  env: Record<string, string | undefined> = process.env,
  telemetry?: TelemetryHandle,
): Promise<RunningAgent> {
  const token = resolveToken(config, env);
  const callers = callerAuth(config, env);
  const allowedHosts = checkListenPolicy(config, token, callers, logger);
  let listening: { host: string; port: number } | undefined;
  const { callPeer, peerRegister } = config.peerClients;
  const identity = (port: number) => ({
    cardName: config.agentCard.name,
    externalUrl: config.agentCard.externalUrl,
    bound: { scheme: config.tls ? ("https" as const) : ("http" as const), host: config.listen.host, port },
  });
  // Checked before anything starts (D366, D367): a named token variable must be set.
  checkPeerRegistration(peerRegister, identity(config.listen.port), env);
  const peerHub = openPeerHub(config, logger);
  const remoteAgents = agentRemoteAgents(process.cwd(), peerHub);
  const peerTools = peerCallTools(callPeer, peerHub, config.tools.outboundAllow, env);
  // D460: targets whose URL variable is unset are dropped here (one stderr line each).
  const alertTools = alertFrontTools(config.alerts, env, config.tools.outboundAllow, logger);
  const frontTools = composeFront(peerTools, alertTools);
  const core = await startRuntimeCore(
    {
      ...runtimeCoreSettings(config),
      ...(remoteAgents ? { remoteAgents } : {}),
      ...(frontTools ? { frontTools } : {}),
    },
    logger,
  );
  telemetry?.observeMetrics(() => core.metrics.render());
  const streams = admitStreams(config.limits.streams, core.metrics);
  const context: AttachContext = {
    sessions: core.sessions,
    daemon: {
      name: config.agentCard.name,
      version: SPAR_VERSION,
      description: config.agentCard.description ?? "spar agent daemon",
      model: config.model.name,
      provider: config.model.provider,
      costCeiling: config.guardrails.maxTurnUsd > 0 || config.guardrails.maxSessionUsd > 0,
    },
    caller: (request, peer) => resolveCaller(request, callers, token, peer),
    checks: core.checks,
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
        origin: { vouched: vouchedHosts(config), own: () => listening },
      },
    },
    ...(peerHub ? { peerHub } : {}),
    ...browserParts(config.ui, uiAuthMode(config, token, callers)),
    ...coreAttachParts(core, config),
  };
  const server = await listen(context, config);
  listening = { host: bindHostname(config.listen), port: server.port };
  const registrar = startPeerRegistrar(peerRegister, identity(server.port), logger, env);
  if (config.tls?.ca !== undefined)
    logger.info("mTLS: each client is verified at the handshake and its requests served in process; no inner port");
  logger.info(
    `spar agent ${SPAR_VERSION} listening on ${config.tls ? "https" : "http"}://${shownHost(config)}:${server.port} (model ${config.model.name}, store ${shownStore(config)}, ${core.pool.size} turn workers)`,
  );
  if (core.tools.mcp)
    logger.info(
      `tool servers: ${core.tools.mcp.rows().length} in ${core.tools.mcp.path}; each starts on first use (a turn or a /tools read)`,
    );
  let stopping: Promise<void> | undefined;
  const shutdown = () => {
    stopping ??= teardown(core, server, config, logger, peerHub, registrar, telemetry);
    return stopping;
  };
  return { config, server, host: core.host, shutdown };
}

/** What the runtime core reads of the agent's configuration. */
function runtimeCoreSettings(config: AgentConfig): RuntimeCoreSettings {
  return {
    store:
      config.sessionDbDriver === "postgres"
        ? {
            driver: "postgres",
            url: config.sessionDb,
            pool: config.sessionDbPool,
            shared: { leaseMs: config.sessionDbLeaseMs },
          }
        : {
            path: config.sessionDb,
            maxMb: config.sessionDbMaxMb,
            // One transaction per event-loop turn, as svc (D326): under load the writes of many
            // requests and turns share a commit; each is still committed before its answer.
            flushOn: "immediate",
          },
    workers: config.workers,
    workerLivenessMs: config.workerLivenessMs,
    tools: config.tools,
    mcp: config.mcp,
    knowledge: config.knowledge,
    permissions: config.permissions,
    guardrails: config.guardrails,
    model: config.model,
    maxSteps: config.maxSteps,
    plansDir: config.plansDir,
    idleTimeoutMs: config.idleTimeoutMs,
    inbox: config.limits.inbox,
    appName: config.appName,
    agentName: config.appName,
    multiSession: config.multiSession,
    autoContinue: config.autoContinue,
    pricing: config.pricing,
    hiddenEnv: [
      config.tokenEnv,
      config.peerClients.callPeer?.tokenEnv,
      config.peerClients.peerRegister?.tokenEnv,
      // The alert targets' URLs and routing keys are secrets too (D460).
      ...config.alerts.targets.flatMap((target) => [target.urlEnv, target.routingKeyEnv]),
    ].filter((name): name is string => name !== undefined),
    subagents: config.subagents,
    wakeLoop: config.wakeLoop,
  };
}

type FrontTools = NonNullable<RuntimeCoreSettings["frontTools"]>;

/** The agent's own tools in front of the core's: `call_peer`, then `alert`, each when configured. */
function composeFront(...layers: Array<FrontTools | undefined>): FrontTools | undefined {
  const present = layers.filter((layer): layer is FrontTools => layer !== undefined);
  if (present.length === 0) return undefined;
  return (inner) => present.reduce((tools, layer) => layer(tools), inner);
}

/** The Host names the agent card may repeat besides loopback ones: `--attach-allowed-hosts` (D333). */
function vouchedHosts(config: AgentConfig): HostAllowlist {
  const parsed = parseAllowedHosts(config.limits.allowedHosts, "--attach-allowed-hosts (attach.allowed_hosts)");
  if (!parsed.ok) throw new SparError("bad_request", parsed.error);
  return parsed.value;
}

/** How the startup line names the store: a postgres URL with its password as `***` (D483). */
function shownStore(config: AgentConfig): string {
  return config.sessionDbDriver === "postgres" ? `postgres ${redactUrl(config.sessionDb)}` : config.sessionDb;
}

function shownHost(config: AgentConfig): string {
  const host = bindHostname(config.listen);
  return host.includes(":") ? `[${host}]` : host;
}

async function listen(context: AttachContext, config: AgentConfig): Promise<AttachServer> {
  try {
    return await startAttachServer(context, bindHostname(config.listen), config.listen.port, config.tls);
  } catch (error) {
    // Bun's own text ("Is port 0 in use?") misleads for a name that does not resolve or an address not on this host.
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `--attach-listen=${shownHost(config)}:${config.listen.port}: cannot listen there: the port is taken, or the host is not an address of this machine (${reason})`,
    );
  }
}

/** The card's bundle skills, re-read on every card fetch (docs/configuration.md#agent-card-file); a bad bundle is left out. */
function cardSkills(dir: string): Array<{ id: string; name: string; description: string }> {
  return scanSkills(dir).skills.map((skill) => ({ id: skill.name, name: skill.name, description: skill.description }));
}

function openPeerHub(config: AgentConfig, logger: Logger): PeerHub | undefined {
  if (!config.peerHub.enabled) return undefined;
  const opened = PeerHub.open({ stateFile: config.peerHub.stateFile, log: logger, limits: config.peerHub.limits });
  if (!opened.ok) throw new SparError("bad_request", opened.error);
  opened.value.startPruning();
  return opened.value;
}

/** How long background subagents may run on at shutdown before they are stopped. */
const SUBAGENT_DRAIN_MS = 5000;

async function teardown(
  core: RuntimeCore,
  server: AttachServer,
  config: AgentConfig,
  logger: Logger,
  peerHub: PeerHub | undefined,
  registrar: PeerRegistrar | undefined,
  telemetry: TelemetryHandle | undefined,
): Promise<void> {
  const cancel = core.beginShutdown();
  // Teardown step 1, the peer hub: deregister from the hub this daemon registered with (within
  // 2 s, D367) while the turns are cancelled; the own hub's changes are on disk: stop its prune timer.
  const deregistered = registrar?.stop(2000);
  peerHub?.close();
  await Promise.all([deregistered, Promise.race([cancel, new Promise((resolve) => setTimeout(resolve, 2000))])]);
  await server.drain(config.shutdownTimeoutMs);
  // Background subagents get their 5 s, then are stopped (docs/agent.md#stopping).
  await core.host.drainSubagents(SUBAGENT_DRAIN_MS);
  // The tool host and its children, the orderly stop of auto-continue, the workers and the store.
  await core.close();
  // Telemetry last (docs/agent.md#stopping), within its 3 s: the spans of the teardown itself go too.
  await telemetry?.shutdown();
  logger.info("shutdown complete");
}
