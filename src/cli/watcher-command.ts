/**
 * `spar watcher watch`: parses and validates the flags (refusals exit 2), starts the watcher
 * (a startup refusal that needs the cluster, such as a missing grant, exits 2 as well), serves
 * /metrics, /healthz and /readyz with --metrics-addr (each request in its server span), exports
 * spans and the same series over OTLP when configured, and on SIGTERM drains, persists and
 * flushes the telemetry (3 s).
 */
import { redactUrl } from "../net/redact-url.ts";
import { createLogger } from "../telemetry/logger.ts";
import { startTelemetry } from "../telemetry/telemetry.ts";
import { SPAR_VERSION } from "../daemon/version.ts";
import { watcherTelemetrySettings } from "./telemetry-flags.ts";
import { StartupRefusal } from "../watcher/watch-runner.ts";
import { type WatcherGroup, startWatcherGroup } from "../watcher/watcher-group.ts";
import { serveProbes } from "../watcher/probe-listener.ts";
import { parseWatcherArgs, watcherHelp } from "./watcher-args.ts";
import { buildWatcherConfig } from "./watcher-config.ts";

const USAGE = "usage: spar watcher watch [flags]   (spar watcher watch --help lists them)\n";

function usageError(message: string): number {
  process.stderr.write(`spar watcher watch: ${redactUrl(message)}\n`);
  return 2;
}

export async function watcherCommand(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === "--help" || sub === "-h" || sub === undefined) {
    if (sub === undefined) process.stderr.write(USAGE);
    else process.stdout.write(watcherHelp());
    return sub === undefined ? 2 : 0;
  }
  if (sub !== "watch") return usageError(`unknown subcommand ${JSON.stringify(sub)}; the watcher has one: watch`);
  const args = parseWatcherArgs(rest);
  if (!args.ok) return usageError(args.error);
  if (args.value.help) {
    process.stdout.write(watcherHelp());
    return 0;
  }
  const config = buildWatcherConfig(args.value);
  if (!config.ok) return usageError(config.error);
  const settings = watcherTelemetrySettings(args.value.values, args.value.given);
  if (!settings.ok) return usageError(settings.error);
  const logger = createLogger(config.value.logLevel);
  const telemetry = await startTelemetry("watcher", { settings: settings.value, version: SPAR_VERSION, logger });
  let watcher: WatcherGroup;
  try {
    watcher = await startWatcherGroup(config.value, logger);
  } catch (error) {
    await telemetry.shutdown();
    if (error instanceof StartupRefusal) return usageError(error.message);
    logger.error(`spar watcher watch failed to start: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
  telemetry.observeMetrics(() => watcher.render());
  let server: ReturnType<typeof serveProbes> | undefined;
  try {
    server = config.value.metricsAddr
      ? serveProbes(config.value.metricsAddr, config.value.metricsAllowedHosts, watcher)
      : undefined;
  } catch (error) {
    // A port in use or an address not on this host: say so in one line, stop what started.
    logger.error(
      `spar watcher watch: --metrics-addr=${config.value.metricsAddr} cannot be served: ${error instanceof Error ? error.message : String(error)}`,
    );
    await watcher.stop().catch(() => undefined);
    await telemetry.shutdown();
    return 1;
  }
  if (server) logger.info(`watcher: metrics listening on http://${server.hostname}:${server.port}`);
  return await new Promise<number>((resolve) => {
    const shutdown = () => {
      logger.info("SIGTERM: draining and persisting the dedup cache");
      void server?.stop(true);
      watcher
        .stop()
        .then(
          () => 0,
          (error: unknown) => {
            logger.error(`shutdown failed: ${String(error)}`);
            return 1;
          },
        )
        .then(async (code) => {
          await telemetry.shutdown();
          resolve(code);
        });
    };
    process.once("SIGTERM", shutdown);
    process.once("SIGINT", shutdown);
  });
}
