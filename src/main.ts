#!/usr/bin/env bun
/**
 * spar: one executable, three roles. Dispatches on the first word (`spar agent`, `spar svc`,
 * `spar watcher watch`) or on the name it was invoked under (`svc`, `watcher`; D1). Run as a
 * program, each role first seals the process (daemon/process-seal.ts, D335: its secrets leave the
 * initial environment, which takes executing itself again), so the roles' modules are imported
 * only after that, when a command needs them.
 */
import { basename } from "node:path";
import { sealProcess, sealWarning } from "./daemon/process-seal.ts";
import { closestName } from "./config/flag-parser.ts";
import { SPAR_VERSION } from "./daemon/version.ts";
import { createLogger } from "./telemetry/logger.ts";

const HELP = `usage: spar <command> [flags]

commands:
  agent           the agent daemon and its attach listener (HTTP + SSE)
  svc             the workflow daemon: workloads and their write gate; \`svc sessions\`, \`svc stop\` operate it
  watcher watch   the Kubernetes watcher: cluster events and sixteen sources into per-incident sessions

Run \`spar <command> --help\` for a command's flags.
`;

/** The arguments with the role first: `svc` and `watcher` can come from the name invoked. */
function commandLine(argv: readonly string[], invokedAs: string): string[] {
  const name = basename(invokedAs).replace(/\.(exe|ts|js)$/, "");
  return name === "svc" || name === "watcher" ? [name, ...argv] : [...argv];
}

/** The roles that seal the process: each is a daemon (or its operator CLI) started with secrets. */
const SEALED_ROLES = new Set(["agent", "svc", "watcher"]);

export async function main(argv: readonly string[], invokedAs: string): Promise<number> {
  const [command, ...rest] = commandLine(argv, invokedAs);
  switch (command) {
    case "agent":
      return (await import("./cli/agent-command.ts")).agentCommand(rest);
    case "watcher":
      return (await import("./cli/watcher-command.ts")).watcherCommand(rest);
    case "svc":
      return (await import("./cli/svc-command.ts")).svcCommand(rest);
    case "--version":
    case "version":
      process.stdout.write(`spar ${SPAR_VERSION}\n`);
      return 0;
    case undefined:
    case "--help":
    case "-h":
    case "help":
      // Asked for, help goes to stdout; a bare `spar` is a usage error, so its help goes to stderr.
      (command === undefined ? process.stderr : process.stdout).write(HELP);
      return command === undefined ? 2 : 0;
    default: {
      const near = closestName(command, ["agent", "svc", "watcher", "version", "help"]);
      const guess = near === undefined ? "" : ` (did you mean \`spar ${near}\`?)`;
      process.stderr.write(`spar: unknown command ${JSON.stringify(command)}${guess}\n${HELP}`);
      return 2;
    }
  }
}

if (import.meta.main) {
  // In the compiled binary (Bun 1.4.5) argv[0] is "bun", argv[1] the embedded entry
  // ("/$bunfs/root/spar", whatever the file is called now) and execPath the real file (a symlink
  // resolved); only process.argv0 keeps the name it was invoked under (`svc`, `./watcher`).
  // From source argv[1] is the script path (Bun resolves a symlink to it) and argv0 is bun's.
  const compiled = /^\/\$bunfs\/|^[A-Z]:[\\/]~BUN[\\/]/i.test(process.argv[1] ?? "");
  const invokedAs = compiled ? process.argv0 : (process.argv[1] ?? "spar");
  const argv = process.argv.slice(2);
  if (SEALED_ROLES.has(commandLine(argv, invokedAs)[0] ?? "")) {
    // Executes this program again (same pid and arguments) unless this is already that second start.
    const warning = sealWarning(sealProcess(), process.pid);
    if (warning !== undefined) createLogger().warn(warning);
  }
  const code = await main(argv, invokedAs);
  process.exit(code);
}
