/**
 * The runtime core's smaller parts, kept apart from its composition (runtime-core.ts): the tool
 * servers' start-on-first-use and reload, the price list, the readiness checks and the runtime's
 * gauges.
 */
import { McpManager, mcpToolName } from "../mcp/mcp-manager.ts";
import type { DigestSettings } from "../core/digest.ts";
import type { ReloadRegistry } from "../memory/reload-registry.ts";
import type { AutoContinuer } from "../runtime/auto-continuer.ts";
import { PricingTable } from "../runtime/pricing-table.ts";
import type { SessionHost } from "../runtime/session-host.ts";
import type { ToolHost } from "../runtime/tool-host.ts";
import type { WorkerPool } from "../runtime/worker-pool.ts";
import type { Store } from "../core/session-store.ts";
import type { CheckState } from "../surfaces/attach/attach-context.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { MetricsRegistry } from "../telemetry/metrics.ts";
import type { McpSettings } from "../cli/mcp-flags.ts";
import { loadCatalogFile } from "../mcp/catalog-file.ts";
import type { PricingSettings } from "../cli/pricing-flags.ts";

/**
 * Before each turn: start (or retry, per --mcp-retry-interval) the tool servers not listed yet,
 * and log each server's outcome once per change.
 */
export function toolServerStarter(tools: ToolHost, logger: Logger): () => Promise<void> {
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
export function mcpOption(settings: McpSettings | undefined, logger: Logger): { mcp?: McpManager } {
  if (settings?.catalog === undefined) return {};
  logger.info(
    `tool servers: ${settings.catalog.servers.map((server) => `${server.name} (${server.transport})`).join(", ")} from ${settings.path}`,
  );
  return {
    mcp: new McpManager(settings.catalog, settings.timeouts, () => loadCatalogFile(settings.path, settings.required)),
  };
}

/** The reload's `mcp` part: re-read mcp.json, stop changed and removed servers, start new ones. */
export function registerMcpReload(reloads: ReloadRegistry, mcp: McpManager | undefined): void {
  if (!mcp) return;
  reloads.register("mcp", async () => {
    const result = await mcp.reload();
    return { count: result.servers.length, errors: result.errors };
  });
}

/** The counters of a store's commits the runtime's gauges read; the sqlite and postgres stores both keep them. */
export interface StoreCommitStats {
  transactions: number;
  refused: number;
  rows: number;
  longestBatchMs: number;
}

/** What the runtime core runs on: any Store that counts its commits. */
export type CoreStore = Store & { readonly stats: StoreCommitStats };

/** The price list: shipped rates, the configured source (refreshed once in the background at start). */
export function startPricing(settings: PricingSettings, logger: Logger): PricingTable {
  const pricing = new PricingTable(settings.source ? { source: settings.source } : {});
  if (settings.source && settings.refreshOnStart) {
    void pricing.refresh().then((result) => {
      const line = `pricing refresh at start: ${result.updated} models updated, ${result.known_models} known`;
      if (result.detail?.startsWith("refresh failed")) logger.warn(`pricing refresh at start: ${result.detail}`);
      else logger.info(result.detail ? `${line}; ${result.detail}` : line);
    });
  }
  return pricing;
}

/** The core's readiness checks, logging one line per state change (the /healthz body carries no detail). */
export function readinessChecks(
  store: CoreStore,
  pool: WorkerPool,
  host: SessionHost,
  logger: Logger,
): () => Promise<Record<string, CheckState>> {
  const last = new Map<string, CheckState>();
  return async () => {
    const checks: Record<string, CheckState> = {
      ...(await storeCheck(store)),
      turn_workers: pool.healthy ? "ready" : "failed",
      wake_loops: host.wakeLoopsFailed() ? "failed" : "ready",
    };
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
async function storeCheck(store: CoreStore): Promise<Record<string, CheckState>> {
  const timeout = new Promise<CheckState>((resolve) => setTimeout(() => resolve("timeout"), 2000).unref());
  const probe = store.probe().then(
    (): CheckState => "ready",
    (): CheckState => "failed",
  );
  return { session_db: await Promise.race([probe, timeout]) };
}

/** The runtime's gauges, named `<prefix>_...` (the daemon's series prefix, D2): auto-continue, sessions and feeds, the workers' cache, the store's commits. */
export function registerRuntimeGauges(
  metrics: MetricsRegistry,
  parts: { store: CoreStore; pool: WorkerPool; host: SessionHost; autoContinue: AutoContinuer },
  prefix: string,
): void {
  const { store, pool, host, autoContinue } = parts;
  metrics.gauge(
    `${prefix}_auto_continue_redriven`,
    "Interrupted turns auto-continue re-drove in this run.",
    () => autoContinue.stats.redriven,
  );
  metrics.gauge(
    `${prefix}_auto_continue_refused`,
    "Re-drives auto-continue refused in this run (a guard or another daemon's claim).",
    () => autoContinue.stats.refused,
  );
  metrics.gauge(`${prefix}_feed_subscribers`, "Subscribers attached to session feeds.", () => host.subscriberCount);
  metrics.gauge(
    `${prefix}_sessions_live`,
    "Sessions held in memory (the rest are idle in the store).",
    () => host.liveCount,
  );
  metrics.gauge(
    `${prefix}_worker_cached_messages`,
    "Conversation messages the turn workers keep between turns (evicted sessions' are dropped).",
    () => pool.cachedMessages,
  );
  metrics.gauge(`${prefix}_store_commits`, "Group-commit transactions since start.", () => store.stats.transactions);
  metrics.gauge(`${prefix}_store_refused_writes`, "Writes the store refused since start.", () => store.stats.refused);
  metrics.gauge(`${prefix}_store_event_rows`, "Event rows committed since start.", () => store.stats.rows);
  metrics.gauge(
    `${prefix}_store_longest_write_ms`,
    "Longest time one group commit held the event loop (ms).",
    () => store.stats.longestBatchMs,
  );
}

/**
 * The digest settings with the tool servers' `no_digest` honoured (D388): a tool of a server the
 * catalog marks `no_digest: true` always passes through. Read from the catalog as it is now, so a
 * `/reload` that changes the mark applies from the next call.
 */
export function withServerExemptions(digest: DigestSettings, mcp: McpManager | undefined): DigestSettings {
  if (mcp === undefined) return digest;
  return {
    ...digest,
    exempt: (tool) =>
      mcp
        .workerConfig()
        .servers.some((server) => server.noDigest === true && tool.startsWith(mcpToolName(server.name, ""))),
  };
}
