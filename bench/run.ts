/**
 * The benchmarks' entry point (`bun run bench <name> [flags...]`, or `bun bench/run.ts`): runs
 * bench/<name>.ts with the given flags, or lists the benchmarks. Each bench measures its baseline
 * in the same run and prints ratios (bench/README.md).
 */
import { join } from "node:path";

/** The runnable benchmarks and what each measures. */
export const BENCHES: Readonly<Record<string, string>> = {
  turns: "turn throughput and latency of the agent daemon (echo model, SSE per session), on sqlite and on PostgreSQL",
  "sse-fanout": "one session's events fanned out to N SSE subscribers",
  "event-log": "the event log: appends, merges, reads, on sqlite and on PostgreSQL",
  "slow-subscriber": "other subscribers' latency while one stops reading",
  soak: "S sessions turning with N subscribers for M minutes: RSS, losses, duplicates",
  mtls: "what serving through the mTLS terminator costs",
  peers: "peer-hub registrations with a state file",
  watcher: "Kubernetes events through the watcher pipeline",
  a2a: "svc's A2A listener: message/send and message/stream against the SDK's own server",
  digest:
    "the structural tool-output digest on real MCP outputs: tokens saved per kind, ms per MiB, p99 added to a call",
  gate: "svc's write gate: 1,000 sessions parked, all approved, against direct MCP calls",
};

if (import.meta.main) {
  const [name, ...flags] = process.argv.slice(2);
  if (name === undefined || name === "--help") {
    process.stdout.write("usage: bun run bench <name> [flags...]\n\n");
    for (const [bench, what] of Object.entries(BENCHES)) process.stdout.write(`  ${bench.padEnd(16)} ${what}\n`);
    process.exit(0);
  }
  if (!(name in BENCHES)) {
    process.stderr.write(`bench: no benchmark ${JSON.stringify(name)} (bun run bench lists them)\n`);
    process.exit(2);
  }
  const child = Bun.spawn([process.execPath, join(import.meta.dir, `${name}.ts`), ...flags], {
    stdio: ["inherit", "inherit", "inherit"],
  });
  process.exit(await child.exited);
}
