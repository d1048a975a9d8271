/**
 * The workflow daemon, composed: loads its workload (src/svc/workload), starts the runtime core
 * every daemon shares (src/daemon/runtime-core.ts, D231) and svc's dispatch on it (the workload's
 * shape: coordinator, graph, fanout, bounded; src/svc/dispatch), its main listener, and with their
 * flags the attach surface, the A2A and the AG-UI listeners (this folder), runs boot auto-resume
 * (svc-auto-resume.ts) and hands back the drain and unwind (svc-shutdown.ts). Takes built
 * settings; parses nothing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { redactUrl } from "../../net/redact-url.ts";
import { listenOn } from "../../surfaces/http/guarded-app.ts";
import { parseAllowedHosts } from "../../surfaces/http/host-allowlist.ts";
import { mainListenerApp } from "../listener/main-listener.ts";
import { SessionControls } from "../session-controls.ts";
import { SessionInjectPort } from "../session-inject-port.ts";
import { openAuditLog } from "../gate/audit-log.ts";
import { SvcRuntime } from "../dispatch/svc-runtime.ts";
import type { LoadedWorkload, Workload } from "../workload/workload.ts";
import type { GuardrailConfig } from "../../core/guardrails.ts";
import { checkAmbientCredentials } from "../../mcp/google-credentials.ts";
import { type SvcAttach, startSvcAttach } from "./svc-attach.ts";
import { admitStreams } from "../../daemon/attach-stream-admission.ts";
import type { StreamAdmission } from "../../surfaces/http/stream-admission.ts";
import type { McpSettings } from "../../cli/mcp-flags.ts";
import { loadWorkload } from "../workload/load-workload.ts";
import type { Logger } from "../../telemetry/logger.ts";
import type { TelemetryHandle } from "../../telemetry/telemetry.ts";
import { bindHostname } from "../../config/listen-address.ts";
import { type RuntimeCore, type RuntimeCoreSettings, startRuntimeCore } from "../../daemon/runtime-core.ts";
import type { SvcConfig } from "../../cli/svc-config.ts";
import { BUILTIN_TOOL_NAMES } from "../../tools/builtin-tools.ts";
import { SPAR_VERSION } from "../../daemon/version.ts";
import type { StopRequest } from "../listener/stop-route.ts";
import type { InterruptionCause } from "../ops/interruption-rows.ts";
import { gatePauser } from "../pause/session-pauses.ts";
import { shutdownSvc } from "./svc-shutdown.ts";
import { IncidentResumer, servesIncident } from "./svc-auto-resume.ts";
import { IncidentRelay } from "../incident-relay.ts";
import type { SessionKey } from "../../core/session-key.ts";
import type { Store } from "../../core/session-store.ts";
import { declaredDirectory } from "../../a2a-client/remote-agent-wiring.ts";
import { a2aRefusal, serveA2a } from "./svc-a2a.ts";
import { startSvcAgui } from "./svc-agui.ts";

/** How long the turns in flight may take to end after SIGTERM without a workload budget (docs/svc.md#limits). */
export const DRAIN_WINDOW_MS = 30_000;

/** The drain window: the workload's `budget.max_wallclock_seconds`, else 30 s (docs/svc.md#limits). */
export function drainWindowMs(workload: Workload): number {
  return workload.budget.maxWallclockSeconds > 0 ? workload.budget.maxWallclockSeconds * 1000 : DRAIN_WINDOW_MS;
}

/** The variables holding svc's listener secrets: tool commands never see them. */
const TOKEN_VARIABLES = ["SVC_INJECT_TOKEN", "SVC_ATTACH_TOKEN", "SVC_A2A_TOKEN", "SVC_AGUI_TOKEN"];

/** The app svc's coordinator sessions live under (a specialist's: `svc.<name>`). */
const SVC_APP = "svc";

export interface RunningSvc {
  port: number;
  /** Resolves when an operator asks the daemon to stop (POST /stop, `svc stop`). */
  stopRequested: Promise<StopRequest>;
  /** Drain and unwind; resolves with the exit code (0 clean, 3 interrupted survivors, 4 teardown watchdog). */
  shutdown(cause?: InterruptionCause): Promise<number>;
}

/** The markers' classification on SIGTERM. */
export const SIGTERM_CAUSE: InterruptionCause = { reason: "shutdown (SIGTERM)", pauseRequested: false };

/** The markers' classification on `svc stop`: `operator stop[: reason]`. */
export function stopCause(request: StopRequest): InterruptionCause {
  return {
    reason: request.reason === undefined ? "operator stop" : `operator stop: ${request.reason}`,
    pauseRequested: request.pauseSessions,
  };
}

export async function startSvc(
  config: SvcConfig,
  logger: Logger,
  cwd: string,
  telemetry?: TelemetryHandle,
): Promise<RunningSvc> {
  const loaded = loadWorkload({
    value: config.workload,
    ...(config.dispatch === undefined ? {} : { dispatchFlag: config.dispatch }),
    cwd,
    env: { ...process.env, ...(config.configDir === undefined ? {} : { SVC_CONFIG_DIR: config.configDir }) },
    wireToolServers: config.model.name !== "echo",
  });
  if (!loaded.ok) throw new Error(loaded.error);
  for (const line of loaded.value.notices) logger.info(line);
  for (const line of loaded.value.warnings) logger.warn(line);
  const workload = loaded.value.workload;
  const refused = a2aRefusal(config, workload);
  if (refused) throw new Error(refused);
  const mcp = workloadMcp(loaded.value, config);
  await checkToolServerCredentials(mcp);
  const audit = openAuditLog(config.auditLog);
  // Gate outcomes are counted once the core's metrics exist (before any session runs).
  const countOutcome: { count?: (labels: { outcome: string }) => void } = {};
  const remoteAgents = declaredDirectory(loaded.value.remoteAgents);
  const runtime = SvcRuntime.forWorkload({
    workload,
    app: SVC_APP,
    remoteAgents,
    onMutation: workload.hitl.onMutation,
    changeSetTtlMs: workload.hitl.changeSetTtlMs,
    audit: (record) => {
      audit.record(record);
      countOutcome.count?.({ outcome: record.outcome });
    },
    logError: (message) => logger.error(message),
  });
  // An incident this daemon has just taken over: its pauses and abort are read again first (D493).
  // An incident this daemon has just taken over: its pauses and abort are read again first, and
  // an interruption its earlier daemon's stop left is resumed here (D493).
  const late: { store?: Store; resumer?: IncidentResumer } = {};
  const store = storeLocation(config, logger, async (scope) => {
    if (scope.app !== runtime.roster.coordinator.app || late.store === undefined) return;
    await runtime.pauses.refresh(scope.id, late.store);
    late.resumer?.taken(scope.id);
  });
  let core: RuntimeCore;
  try {
    core = await startRuntimeCore(
      {
        ...coreSettings(config, store.settings, runtime, mcp, workload, countOutcome, late),
        ...(remoteAgents ? { remoteAgents } : {}),
      },
      logger,
    );
  } catch (error) {
    audit.close();
    store.remove();
    throw error;
  }
  let requestStop: (request: StopRequest) => void = () => {};
  const stopRequested = new Promise<StopRequest>((resolve) => {
    requestStop = resolve;
  });
  const windowMs = drainWindowMs(workload);
  let server: ReturnType<typeof Bun.serve>;
  try {
    server = serveMainListener(config, core, runtime, (request) => {
      requestStop(request);
      return windowMs;
    });
  } catch (error) {
    await core.close();
    audit.close();
    store.remove();
    throw error;
  }
  let attach: SvcAttach | undefined;
  let a2a: ReturnType<typeof Bun.serve> | undefined;
  let agui: ReturnType<typeof startSvcAgui>;
  // One admission for every stream the daemon holds open: attach events, A2A and AG-UI runs (D334).
  const streams = admitStreams(config.limits.streams, core.metrics);
  try {
    attach = await serveAttach(config, core, workload, logger, streams);
    a2a = serveA2a(config, core, runtime, workload, logger, streams);
    agui = startSvcAgui(config, runtime, workload, () => core.sessions.refuseWhileDraining(), logger, streams);
  } catch (error) {
    // Undo what started, in reverse: a listener that failed to bind leaves the rest closed.
    await a2a?.stop(true);
    await attach?.drain(0);
    await server.stop(true);
    await core.close();
    audit.close();
    store.remove();
    throw error;
  }
  core.metrics.gauge(
    "svc_loaded_sessions",
    "Sessions svc keeps state for in memory (loaded; dropped when idle past --session-idle-timeout).",
    () => runtime.loaded.size,
  );
  telemetry?.observeMetrics(() => core.metrics.render());
  const recovered = await runtime.recovery.recover((id) =>
    servesIncident(core, { app: runtime.roster.coordinator.app, id }),
  );
  if (recovered.length > 0)
    logger.info(`carrying out answers a crash left undone, on sessions ${recovered.join(", ")}`);
  const shown = config.listen.address.host.includes(":")
    ? `[${bindHostname(config.listen.address)}]`
    : bindHostname(config.listen.address);
  logger.info(
    `spar svc ${SPAR_VERSION} listening on http://${shown}:${server.port} (workload ${workload.name}, ${workload.dispatch} dispatch, ${runtime.roster.coordinator.name}, model ${config.model.name}, store ${store.shown})`,
  );
  const resumer = new IncidentResumer(config, core, runtime, workload, logger);
  late.resumer = resumer;
  await resumer.atBoot();
  let stopping: Promise<number> | undefined;
  const shutdown = (cause: InterruptionCause = SIGTERM_CAUSE) => {
    // Draining: the listener answers writes 503 while the turns in flight end by themselves.
    stopping ??= shutdownSvc(
      {
        core,
        runtime,
        server,
        ...(attach ? { drainAttach: (timeoutMs: number) => attach.drain(timeoutMs) } : {}),
        release: () => {
          void a2a?.stop(true);
          void agui?.stop();
          runtime.pauses.close();
          audit.close();
          store.remove();
        },
        pauser: gatePauser(runtime.pauses),
        ...(telemetry ? { telemetry } : {}),
        windowMs,
        logger,
        write: (text) => process.stderr.write(text),
      },
      cause,
    );
    return stopping;
  };
  return { port: server.port ?? 0, stopRequested, shutdown };
}

/** The operator attach surface when `--attach-listen` is set (svc-attach.ts); undefined otherwise. */
async function serveAttach(
  config: SvcConfig,
  core: RuntimeCore,
  workload: Workload,
  logger: Logger,
  streams: StreamAdmission,
): Promise<SvcAttach | undefined> {
  if (config.attach === undefined) return undefined;
  return await startSvcAttach({ config, settings: config.attach, core, workload, logger, streams });
}

/**
 * Startup fails fast when a wired http tool server declaring `auth.google_oauth` cannot get a
 * token from the ambient credentials (docs/svc.md#tool-servers-with-authgoogle_oauth): before the store opens or anything
 * listens, naming each server and why.
 */
async function checkToolServerCredentials(mcp: McpSettings | undefined): Promise<void> {
  const checked = await checkAmbientCredentials(mcp?.catalog);
  if (!checked.ok) throw new Error(`ambient Google credentials for the workload's tool servers: ${checked.error}`);
}

/**
 * The watchdog posture of svc's sessions: `--watchdog` (or `svc.watchdog`), else the workload's
 * `safety.watchdog`, else `feedback` (docs/svc.md#the-watchdog-posture, D229).
 */
function svcGuardrails(base: GuardrailConfig, config: SvcConfig, workload: Workload): GuardrailConfig {
  return { ...base, watchdog: config.watchdog ?? workload.safety.watchdog ?? "feedback" };
}

function serveMainListener(
  config: SvcConfig,
  core: RuntimeCore,
  runtime: SvcRuntime,
  stop: (request: StopRequest) => number,
): ReturnType<typeof Bun.serve> {
  const token = config.listen.token;
  let allowedHosts: ReturnType<typeof parseAllowedHosts> | undefined;
  if (token === undefined) {
    allowedHosts = parseAllowedHosts(config.limits.allowedHosts, "--attach-allowed-hosts (attach.allowed_hosts)");
    if (!allowedHosts.ok) throw new Error(allowedHosts.error);
  }
  const port = new SessionInjectPort(runtime, () => core.metrics.render());
  const controls = new SessionControls(core.sessions, stop, (sessionId, caller, reason) =>
    runtime.operator.abort(sessionId, caller, reason),
  );
  // Several svc daemons on one database: an incident's requests run on the daemon serving it (D493).
  const relayed =
    core.relay === undefined
      ? undefined
      : new IncidentRelay({
          relay: core.relay,
          coordinatorApp: runtime.roster.coordinator.app,
          port,
          controls,
          tokenIncident: (token) => runtime.pauses.incidentOf(token, core.store),
        });
  const app = mainListenerApp({
    port: relayed ?? port,
    controls: relayed ?? controls,
    token,
    ...(allowedHosts?.ok ? { allowedHosts: allowedHosts.value } : {}),
    idleTimeoutSeconds: config.limits.idleTimeoutSeconds,
  });
  try {
    return listenOn(app, { hostname: bindHostname(config.listen.address), port: config.listen.address.port });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `--listen: cannot listen there: the port is taken, or the host is not an address of this machine (${reason})`,
    );
  }
}

/** A specialist's session (`svc.<name>`) is covered by its incident's coordinator session's lease (D492). */
function incidentLeaseApp(app: string): string {
  return app.startsWith(`${SVC_APP}.`) ? SVC_APP : app;
}

/**
 * Where the store lives: the PostgreSQL database of a postgres `--session-db`, the `--session-db`
 * file, or for an empty one (in memory, no durability) a private directory of its own, removed
 * when the daemon stops. `shown`: how the startup line names it (credentials redacted).
 */
function storeLocation(
  config: SvcConfig,
  logger: Logger,
  taken: (scope: SessionKey) => Promise<void>,
): { settings: RuntimeCoreSettings["store"]; shown: string; remove(): void } {
  const { driver, location, inMemory, pool, leaseMs } = config.sessionDb;
  if (driver === "postgres")
    return {
      // Several svc daemons may share the database: an incident is served whole by the holder of
      // its coordinator session's lease (D492, D493).
      settings: { driver, url: location, pool, shared: { leaseMs, leaseApp: incidentLeaseApp, taken } },
      shown: `postgres ${redactUrl(location)}`,
      remove: () => {},
    };
  // A burst of approvals commits in few transactions: each event-loop turn's writes in one (D255).
  // Commits per event-loop turn, at most one per 3 ms (D255, D295): a stream of approved calls'
  // results makes one transaction per interval.
  const sqlite = (path: string) => ({ path, maxMb: 0, flushOn: "immediate" as const, minCommitIntervalMs: 3 });
  if (!inMemory) return { settings: sqlite(location), shown: location, remove: () => {} };
  const directory = mkdtempSync(join(tmpdir(), "spar-svc-"));
  logger.warn(
    "no --session-db: sessions live only as long as this process (no durability, no auto-resume); set --session-db=PATH to keep them",
  );
  return {
    settings: sqlite(join(directory, "sessions.db")),
    shown: "in memory",
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}

/**
 * The workload's tool servers, when they are wired (not under `echo`): only the servers its
 * catalog references, started lazily on first use and kept for the daemon's lifetime.
 */
function workloadMcp(loaded: LoadedWorkload, config: SvcConfig): McpSettings | undefined {
  const catalog = loaded.mcpCatalog;
  if (catalog === undefined || loaded.mcpCatalogPath === undefined) return undefined;
  const used = new Set(loaded.workload.toolCatalog.mcp.map((entry) => entry.server));
  return {
    path: loaded.mcpCatalogPath,
    required: true,
    timeouts: config.mcpTimeouts,
    catalog: { ...catalog, servers: catalog.servers.filter((server) => used.has(server.name)) },
  };
}

/** The runtime core's settings for svc: the agent's defaults, with svc's store, model and limits (D233). */
function coreSettings(
  config: SvcConfig,
  store: RuntimeCoreSettings["store"],
  runtime: SvcRuntime,
  mcp: McpSettings | undefined,
  workload: Workload,
  countOutcome: { count?: (labels: { outcome: string }) => void },
  late: { store?: Store; resumer?: IncidentResumer },
): RuntimeCoreSettings {
  const base = config.agentDefaults;
  return {
    store,
    workers: base.workers,
    workerLivenessMs: base.workerLivenessMs,
    // A workload's agents have its tool servers' tools only: every builtin is disabled.
    tools: { ...base.tools, disabled: [...BUILTIN_TOOL_NAMES] },
    mcp,
    knowledge: base.knowledge,
    // svc's write gate asks the operator; the permission gate only applies the deny policy.
    permissions: { ...base.permissions, mode: "allow", allow: [], deny: config.deny },
    guardrails: svcGuardrails(base.guardrails, config, workload),
    model: config.model,
    maxSteps: base.maxSteps,
    plansDir: base.plansDir,
    // Each turn is bounded by the workload's wallclock budget (docs/svc.md#turn-deadline); 0: none.
    turnDeadlineMs: workload.budget.maxWallclockSeconds * 1000,
    idleTimeoutMs: config.sessionIdleTimeoutMs,
    inbox: config.limits.inbox,
    appName: "svc",
    agentName: runtime.roster.coordinator.name,
    multiSession: true,
    // The agent's auto-continue would re-drive a parked turn after a restart; svc's own boot
    // auto-resume (--auto-resume: coordinator sessions, never past a dangling mutation) replaces it.
    autoContinue: { ...base.autoContinue, enabled: false },
    pricing: config.pricing,
    hiddenEnv: TOKEN_VARIABLES,
    executorFor: runtime.executorFor,
    metricPrefix: "svc",
    beforeStart: (core) => {
      countOutcome.count = core.metrics.counter(
        "svc_gate_outcomes_total",
        "Write-gate adjudications, by audit outcome.",
      );
      runtime.bind({ sessions: core.sessions, log: core.store, runner: core.catalog, mcp: core.tools.mcp });
      late.store = core.store;
      // Gate pauses hold before any turn runs: their rows are read (and timers armed) first.
      return runtime.pauses.load(core.store).then(() => undefined);
    },
  };
}
