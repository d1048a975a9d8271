/**
 * `spar svc`: the operator verbs (`svc sessions ...`, `svc stop`: svc-sessions/), or the workflow
 * daemon: parses the flags and the config file into its settings (svc-config.ts), starts its
 * telemetry and the daemon (src/svc/daemon/svc-daemon.ts), and on SIGTERM or POST /stop drains
 * and unwinds it, exiting 0, 3 or 4 (docs/svc.md). A usage error exits 2, a refused start 1.
 */
import { loadConfigFile } from "../config/config-file.ts";
import { parseFlags } from "../config/flag-parser.ts";
import { redactUrl } from "../net/redact-url.ts";
import { type RunningSvc, SIGTERM_CAUSE, startSvc, stopCause } from "../svc/daemon/svc-daemon.ts";
import { EXIT_ERROR } from "../svc/daemon/svc-shutdown.ts";
import { createLogger } from "../telemetry/logger.ts";
import { startTelemetry } from "../telemetry/telemetry.ts";
import { buildSvcConfig, svcConfigPath, svcStartupWarnings } from "./svc-config.ts";
import { SVC_FLAGS, svcHelp } from "./svc-flags.ts";
import { SPAR_VERSION } from "../daemon/version.ts";
import { isOperatorCommand, operatorCommand } from "./svc-sessions/operator-command.ts";

export async function svcCommand(argv: readonly string[]): Promise<number> {
  if (isOperatorCommand(argv)) return operatorCommand(argv);
  const flags = parseFlags(SVC_FLAGS, argv);
  if (!flags.ok) return usageError(flags.error);
  if (flags.value.help) {
    process.stdout.write(svcHelp());
    return 0;
  }
  if (flags.value.values.get("version") === true) {
    process.stdout.write(`spar svc ${SPAR_VERSION}\n`);
    return 0;
  }
  if (flags.value.positionals.length > 0)
    return usageError(
      `unexpected argument ${JSON.stringify(flags.value.positionals[0])} (one-shot mode is not in this build yet)`,
    );
  const cwd = process.cwd();
  const file = loadConfigFile(svcConfigPath(flags.value.values.get("config"), cwd));
  if (!file.ok) return usageError(file.error);
  const config = buildSvcConfig(flags.value.values, file.value, process.env, cwd);
  if (!config.ok) return usageError(config.error);
  const logger = createLogger(config.value.logLevel);
  for (const line of svcStartupWarnings(config.value)) logger.warn(line);
  // Heard from the start: a SIGTERM that arrives while svc starts (or right after it logged its
  // listen line) shuts it down once started, instead of killing it with the default action.
  const terminated = new Promise<void>((resolve) => process.once("SIGTERM", () => resolve()));
  const telemetry = await startTelemetry("svc", { settings: config.value.telemetry, version: SPAR_VERSION, logger });
  let running: RunningSvc;
  try {
    running = await startSvc(config.value, logger, cwd, telemetry);
  } catch (error) {
    logger.error(`spar svc failed to start: ${error instanceof Error ? error.message : String(error)}`);
    await telemetry.shutdown();
    return 1;
  }
  const stop = await Promise.race([terminated.then(() => undefined), running.stopRequested]);
  if (stop === undefined) logger.info("SIGTERM: shutting down");
  else
    logger.info(
      `stop requested by ${stop.caller.identity}${stop.pauseSessions ? " (--pause-sessions)" : ""}: shutting down`,
    );
  return await running.shutdown(stop === undefined ? SIGTERM_CAUSE : stopCause(stop)).catch((error: unknown) => {
    logger.error(`shutdown failed: ${String(error)}`);
    return EXIT_ERROR;
  });
}

function usageError(message: string): number {
  process.stderr.write(`spar svc: ${redactUrl(message)}\n`);
  return 2;
}
