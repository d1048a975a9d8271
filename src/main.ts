#!/usr/bin/env bun
/**
 * spar: one executable, three roles. Dispatches on the first word (`spar agent`, `spar svc`,
 * `spar watcher watch`) or on the name it was invoked under (`svc`, `watcher`; D1).
 */
import { basename } from "node:path";
import { agentCommand } from "./cli/agent-command.ts";
import { closestName } from "./config/flag-parser.ts";
import { svcCommand } from "./cli/svc-command.ts";
import { SPAR_VERSION } from "./cli/version.ts";
import { watcherCommand } from "./cli/watcher-command.ts";

const HELP = `usage: spar <command> [flags]

commands:
  agent           the agent daemon and its attach listener (HTTP + SSE)
  svc             the workflow daemon: workloads and their write gate; \`svc sessions\`, \`svc stop\` operate it
  watcher watch   the Kubernetes event watcher: cluster events into per-incident sessions

Run \`spar <command> --help\` for a command's flags.
`;

export async function main(argv: readonly string[], invokedAs: string): Promise<number> {
  const name = basename(invokedAs).replace(/\.(exe|ts|js)$/, "");
  const args = name === "svc" || name === "watcher" ? [name, ...argv] : [...argv];
  const [command, ...rest] = args;
  switch (command) {
    case "agent":
      return agentCommand(rest);
    case "watcher":
      return watcherCommand(rest);
    case "svc":
      return svcCommand(rest);
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
  const code = await main(process.argv.slice(2), invokedAs);
  process.exit(code);
}
