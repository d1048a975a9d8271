/**
 * The real `spar agent` wiring (flags, config file, startAgent) started inside the test process:
 * the same context, guards and routes the process builds, listening on a real port (port 0, read
 * back), and reachable in-process through `handle(new Request(...))` without a socket. The host
 * is exposed so a test can read state (sessions, ACLs, event-log heads) without a request.
 */
import { join } from "node:path";
import { AGENT_FLAGS } from "../../src/cli/agent-flags.ts";
import { buildAgentConfig } from "../../src/cli/agent-config.ts";
import { type RunningAgent, startAgent } from "../../src/agent/agent-daemon.ts";
import { loadConfigFile } from "../../src/config/config-file.ts";
import { parseFlags } from "../../src/config/flag-parser.ts";
import { tempDir } from "./daemon.ts";

export interface InProcessAgent {
  readonly agent: RunningAgent;
  /** http://127.0.0.1:<port> of the real listener. */
  readonly baseUrl: string;
  readonly port: number;
  /** Everything the daemon logged so far. */
  log(): string;
  /** Serve one request in-process (no socket); relative URLs are resolved against baseUrl. */
  handle(request: Request): Promise<Response>;
  stop(): Promise<void>;
}

export interface InProcessAgentOptions {
  /** Flags after `agent` (`--attach-listen` and `--session-db` are added when absent; `--config` is read as the command reads it). */
  args?: string[];
  /** Variables the agent reads (token variables), over process.env. */
  env?: Record<string, string | undefined>;
}

export async function startInProcessAgent(options: InProcessAgentOptions = {}): Promise<InProcessAgent> {
  const args = options.args ?? [];
  const defaults = [
    ...(args.some((arg) => arg.startsWith("--attach-listen=")) ? [] : ["--attach-listen=127.0.0.1:0"]),
    ...(args.some((arg) => arg.startsWith("--session-db=")) ? [] : [`--session-db=${join(tempDir(), "sessions.db")}`]),
  ];
  const flags = parseFlags(AGENT_FLAGS, [...defaults, ...args]);
  if (!flags.ok) throw new Error(`flags: ${flags.error}`);
  const configFlag = flags.value.values.get("config");
  const file = loadConfigFile(typeof configFlag === "string" ? configFlag : undefined);
  if (!file.ok) throw new Error(`config: ${file.error}`);
  const config = buildAgentConfig(flags.value.values, file.value, tempDir(), 2);
  if (!config.ok) throw new Error(`config: ${config.error}`);
  let logged = "";
  const write = (level: string) => (message: string) => {
    logged += `${level} ${message}\n`;
  };
  const logger = { debug: write("DEBUG"), info: write("INFO"), warn: write("WARN"), error: write("ERROR") };
  const agent = await startAgent(config.value, logger, { ...process.env, ...options.env });
  const baseUrl = `http://127.0.0.1:${agent.server.port}`;
  return {
    agent,
    baseUrl,
    port: agent.server.port,
    log: () => logged,
    handle: (request) => agent.server.handle(request),
    stop: () => agent.shutdown(),
  };
}
