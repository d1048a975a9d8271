import { type RunningAgent, startAgent } from "../agent/agent-daemon.ts";
import { redactUrl } from "../net/redact-url.ts";
import { createLogger } from "../telemetry/logger.ts";
import { startTelemetry } from "../telemetry/telemetry.ts";
import { buildAgentConfig } from "./agent-config.ts";
import { AGENT_FLAGS } from "./agent-flags.ts";
import { defaultConfigPath, loadConfigFile } from "../config/config-file.ts";
import { parseFlags, renderHelp } from "../config/flag-parser.ts";
import { SPAR_VERSION } from "../daemon/version.ts";

const USAGE = "spar agent [--attach-listen=HOST:PORT] [--session-db=PATH] [--model=echo|scripted] [flags]";
const SUMMARY =
  "Runs the agent daemon: durable sessions, the attach listener (HTTP + SSE) and turn workers.\n" +
  "Example: spar agent --attach-listen=127.0.0.1:7777 --session-db=.agents/state/sessions.db --model=echo";

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
  const telemetry = await startTelemetry("agent", { settings: config.value.telemetry, version: SPAR_VERSION, logger });
  let agent: RunningAgent;
  try {
    agent = await startAgent(config.value, logger, process.env, telemetry);
  } catch (error) {
    logger.error(`spar agent failed to start: ${error instanceof Error ? error.message : String(error)}`);
    await telemetry.shutdown();
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

function configPathShown(configFlag: unknown, cwd: string): string {
  return typeof configFlag === "string" ? configFlag : (defaultConfigPath(cwd) ?? "(none)");
}
