/**
 * Peer-hub registration benchmark (issue 13 item 7): what N registrations cost the daemon with a
 * state file. Run: `bun bench/peers.ts [--count=2000] [--labels=16] [--label-bytes=240]
 * [--ttl=3600] [--before=<dir of an older checkout>] [--extra="--flag=value ..."]`.
 *
 * Per variant, a fresh `spar agent --attach-peer-hub --attach-peer-state-file=...` (`--extra` flags
 * appended, e.g. raised caps) and one caller registering `--count` peers one after another, each
 * with `--labels` labels of `--label-bytes` characters and a `--ttl` lease. Reports the total time,
 * the statuses answered, the bytes the daemon wrote (wchar of /proc/<pid>/io: every write call,
 * its log included), the state files' sizes at the end and the RSS before and after.
 * Variants: `after` (this tree), and `before` (the tree in `--before`) if given.
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { BUN, REPO_ROOT, argFlags, benchTempDir, fmt, nowMs, rssKiB, spawnServer, table } from "./lib.ts";

const flags = argFlags(process.argv.slice(2));
const COUNT = Number(flags.get("count") ?? 2000);
const LABELS = Number(flags.get("labels") ?? 16);
const LABEL_BYTES = Number(flags.get("label-bytes") ?? 240);
const TTL = Number(flags.get("ttl") ?? 3600);
const BEFORE = flags.get("before");
const EXTRA = (flags.get("extra") ?? "").split(" ").filter((arg) => arg !== "");

function writtenBytes(pid: number): number {
  const match = /^wchar: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, "utf8"));
  return match ? Number(match[1]) : Number.NaN;
}

function stateBytes(dir: string): number {
  return readdirSync(dir)
    .filter((name) => name.startsWith("peers."))
    .reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
}

async function run(variant: string, root: string, extra: readonly string[]): Promise<string[]> {
  const dir = benchTempDir("spar-bench-peers-");
  const server = await spawnServer(variant, [
    BUN,
    join(root, "src/main.ts"),
    "agent",
    "--attach-listen=127.0.0.1:0",
    `--session-db=${join(dir, "sessions.db")}`,
    "--attach-peer-hub",
    `--attach-peer-state-file=${join(dir, "peers.jsonl")}`,
    ...extra,
  ]);
  try {
    const labels = Object.fromEntries(
      Array.from({ length: LABELS }, (_, index) => [`label${index}`, "v".repeat(LABEL_BYTES)]),
    );
    const rssBefore = rssKiB(server.pid);
    const writtenBefore = writtenBytes(server.pid);
    const statuses = new Map<number, number>();
    const started = nowMs();
    for (let index = 0; index < COUNT; index++) {
      const response = await fetch(`${server.baseUrl}/peers`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          name: `peer-${index}`,
          endpoint: `https://peer-${index}.example`,
          labels,
          heartbeat_ttl_sec: TTL,
        }),
      });
      await response.arrayBuffer();
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    }
    const seconds = (nowMs() - started) / 1000;
    const written = writtenBytes(server.pid) - writtenBefore;
    const listed = await (await fetch(`${server.baseUrl}/peers`)).arrayBuffer();
    const rssAfter = rssKiB(server.pid);
    const answered = [...statuses].map(([status, n]) => `${n}x${status}`).join(", ");
    console.error(`${variant}: ${fmt(seconds)} s, ${answered}, ${fmt(written / 1e6)} MB written`);
    return [
      variant,
      fmt(seconds),
      answered,
      fmt(written / 1e6),
      fmt(stateBytes(dir) / 1e6),
      fmt(listed.byteLength / 1e6),
      `${fmt(rssBefore / 1024)} -> ${fmt(rssAfter / 1024)}`,
    ];
  } finally {
    await server.stop();
  }
}

const rows: string[][] = [];
rows.push(await run("after", REPO_ROOT, EXTRA));
if (BEFORE) rows.push(await run("before", BEFORE, []));
console.log(
  `\n${COUNT} registrations by one caller, ${LABELS} labels x ${LABEL_BYTES} B, TTL ${TTL} s${EXTRA.length > 0 ? `; after with ${EXTRA.join(" ")}` : ""}\n`,
);
console.log(table(["variant", "total s", "answers", "MB written", "state files MB", "GET /peers MB", "RSS MiB"], rows));
