/**
 * `spar agent`'s startup decisions without a process: `agentConfigFrom()` reads flags and the
 * config file and builds the config as the command does (a usage error there exits 2), and
 * `startupRefusal()` runs `startAgent` on a built config and returns the message it refuses with
 * (a refusal there exits 1). Milliseconds each, against the public builders.
 */
import { type AgentConfig, buildAgentConfig } from "../../src/cli/agent-config.ts";
import { startAgent } from "../../src/agent/agent-daemon.ts";
import { AGENT_FLAGS } from "../../src/cli/agent-flags.ts";
import { defaultConfigPath, loadConfigFile } from "../../src/config/config-file.ts";
import { parseFlags } from "../../src/config/flag-parser.ts";
import type { Result } from "../../src/core/result.ts";

/** The config `spar agent <args>` run in `cwd` builds, or the usage error it exits 2 with. */
export function agentConfigFrom(args: readonly string[], cwd: string): Result<AgentConfig> {
  const flags = parseFlags(AGENT_FLAGS, args);
  if (!flags.ok) return flags;
  const configFlag = flags.value.values.get("config");
  const file = loadConfigFile(typeof configFlag === "string" ? configFlag : defaultConfigPath(cwd));
  if (!file.ok) return file;
  return buildAgentConfig(flags.value.values, file.value, cwd, 2);
}

/** The usage error `spar agent <args>` exits 2 with (fails the test when the config builds). */
export function usageError(args: readonly string[], cwd: string): string {
  const config = agentConfigFrom(args, cwd);
  if (config.ok) throw new Error(`expected a usage error for ${args.join(" ")}, the config built`);
  return config.error;
}

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/**
 * The message `startAgent` refuses `spar agent <args>` with (what the command logs before exiting
 * 1), given the variables in `env`. A daemon that starts instead is shut down and the test fails.
 */
export async function startupRefusal(
  args: readonly string[],
  cwd: string,
  env: Record<string, string | undefined> = {},
): Promise<string> {
  const config = agentConfigFrom(args, cwd);
  if (!config.ok) throw new Error(`expected the config to build, got: ${config.error}`);
  let started: Awaited<ReturnType<typeof startAgent>>;
  try {
    started = await startAgent(config.value, quiet, env);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  await started.shutdown();
  throw new Error(`expected startAgent to refuse ${args.join(" ")}, it started`);
}
