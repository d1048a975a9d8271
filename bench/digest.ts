/**
 * The structural tool-output digest (D352) on real tool outputs: the corpus is recorded at bench
 * time from the MCP server the test suite runs (server-filesystem over stdio, results mapped to
 * the row the model reads exactly as the daemon maps them): JSON directory trees, log files, a
 * CSV table and a directory listing under the threshold. Per output: bytes and estimated tokens before and after, time per
 * MiB digested (median of --rounds runs) and the p99 the digest adds to a tool call (measuring
 * the result, digesting it, measuring the digest: what the turn runner adds). Prints markdown.
 *
 *   bun bench/digest.ts [--rounds=30]
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { toRunResult } from "../src/mcp/server-connection.ts";
import { digestToolResult } from "../src/runtime/tool-digest.ts";
import { REPO_ROOT, argFlags, benchTempDir, fmt, median, quantile, table } from "./lib.ts";

const FILESYSTEM = join(REPO_ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const rounds = Number(argFlags(process.argv.slice(2)).get("rounds") ?? "30");

/** A service log: mostly request lines, a retry storm, a stack trace, warnings. */
function serviceLog(lines: number): string {
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    const ts = `2026-11-28T10:${String(Math.floor(i / 600) % 60).padStart(2, "0")}:${String(Math.floor(i / 10) % 60).padStart(2, "0")}.${String(i % 1000).padStart(3, "0")}Z`;
    if (i % 997 === 500)
      out.push(
        `${ts} ERROR db pool: connection ${i} reset by peer`,
        "    at Pool.acquire (pool.ts:88:11)",
        "    at Handler.run (handler.ts:41:5)",
      );
    else if (i % 401 === 7) out.push(`${ts} WARN slow request id=${i} took ${900 + (i % 300)}ms`);
    else if (i > 3000 && i < 3400) out.push(`${ts} INFO retrying upstream call attempt=${i - 3000}`);
    else out.push(`${ts} INFO GET /api/v1/items/${(i * 7919) % 100000} 200 ${i % 40}ms user=u${i % 97}`);
  }
  return out.join("\n");
}

function csv(rows: number): string {
  const lines = ["id,name,namespace,status,restarts,age"];
  for (let i = 0; i < rows; i++)
    lines.push(
      `${i},pod-${i.toString(36)},ns-${i % 12},${i % 23 === 0 ? "CrashLoopBackOff" : "Running"},${i % 5},${i % 90}d`,
    );
  return lines.join("\n");
}

interface Sample {
  name: string;
  kind: string;
  output: Record<string, unknown>;
}

async function recordCorpus(): Promise<Sample[]> {
  const root = benchTempDir("spar-bench-digest-");
  mkdirSync(join(root, "logs"));
  writeFileSync(join(root, "logs", "service.log"), serviceLog(6000));
  writeFileSync(join(root, "logs", "small.log"), serviceLog(300));
  writeFileSync(join(root, "pods.csv"), csv(2000));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [FILESYSTEM, root, join(REPO_ROOT, "src"), join(REPO_ROOT, "node_modules/@modelcontextprotocol")],
    stderr: "ignore",
  });
  const client = new Client({ name: "spar-bench-digest", version: "1" });
  await client.connect(transport);
  const callTool = async (name: string, args: Record<string, unknown>) =>
    toRunResult((await client.callTool({ name, arguments: args })) as Record<string, unknown>).output;
  try {
    return [
      {
        name: "directory_tree src/",
        kind: "json",
        output: await callTool("directory_tree", { path: join(REPO_ROOT, "src") }),
      },
      {
        name: "directory_tree sdk/dist/esm",
        kind: "json",
        output: await callTool("directory_tree", {
          path: join(REPO_ROOT, "node_modules/@modelcontextprotocol/sdk/dist/esm"),
        }),
      },
      {
        name: "read_text_file service.log",
        kind: "log",
        output: await callTool("read_text_file", { path: join(root, "logs", "service.log") }),
      },
      {
        name: "read_text_file small.log",
        kind: "log",
        output: await callTool("read_text_file", { path: join(root, "logs", "small.log") }),
      },
      {
        name: "read_text_file pods.csv",
        kind: "table",
        output: await callTool("read_text_file", { path: join(root, "pods.csv") }),
      },
      {
        name: "list_directory_with_sizes src/runtime",
        kind: "listing",
        output: await callTool("list_directory_with_sizes", { path: join(REPO_ROOT, "src/runtime") }),
      },
    ];
  } finally {
    await client.close();
  }
}

const SETTINGS = { strategy: "structural" as const, thresholdBytes: 16384 };
// The structural strategy never calls the model: no context is read.
const NO_CONTEXT = {} as Parameters<typeof digestToolResult>[1];

async function main() {
  const corpus = await recordCorpus();
  const rows: string[][] = [];
  const added: number[] = [];
  const perKind = new Map<string, { raw: number; digest: number }>();
  for (const sample of corpus) {
    const call = { callId: "bench", name: sample.name, args: {} };
    const result = { output: sample.output, isError: false };
    const digested = await digestToolResult(SETTINGS, NO_CONTEXT, call, result);
    const record = digested?.record;
    if (!record) continue;
    const times: number[] = [];
    // Baseline, interleaved in the same rounds: encoding the raw result once (what committing its
    // row costs anyway); the digest's time is quoted as a multiple of it.
    const baseline: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const encoded = performance.now();
      JSON.stringify(result.output);
      baseline.push(performance.now() - encoded);
      const started = performance.now();
      await digestToolResult(SETTINGS, NO_CONTEXT, call, result);
      times.push(performance.now() - started);
    }
    added.push(...times);
    const mib = record.rawBytes / (1024 * 1024);
    const saved = 1 - record.digestTokensEst / record.rawTokensEst;
    if (record.rawBytes > SETTINGS.thresholdBytes) {
      const kind = perKind.get(sample.kind) ?? { raw: 0, digest: 0 };
      kind.raw += record.rawTokensEst;
      kind.digest += record.digestTokensEst;
      perKind.set(sample.kind, kind);
    }
    rows.push([
      sample.name,
      sample.kind,
      record.method,
      fmt(record.rawBytes / 1024),
      fmt(record.digestBytes / 1024),
      fmt(record.rawTokensEst),
      fmt(record.digestTokensEst),
      record.method === "passthrough" ? "-" : `${(saved * 100).toFixed(1)}%`,
      fmt(median(times)),
      record.method === "passthrough" ? "-" : fmt(median(times) / mib),
      fmt(median(baseline)),
      `${fmt(median(times) / median(baseline))}x`,
    ]);
  }
  const sorted = [...added].sort((a, b) => a - b);
  process.stdout.write(
    `## Structural digest, ${corpus.length} outputs from server-filesystem, ${rounds} rounds each\n\n`,
  );
  process.stdout.write(
    `${table(["output", "kind", "method", "raw KiB", "digest KiB", "raw tokens", "digest tokens", "tokens saved", "median ms", "ms/MiB", "stringify ms", "digest/stringify"], rows)}\n\n`,
  );
  const kinds = [...perKind].map(([kind, { raw, digest }]) => [
    kind,
    fmt(raw),
    fmt(digest),
    `${((1 - digest / raw) * 100).toFixed(1)}%`,
  ]);
  process.stdout.write(`${table(["kind (outputs over 16 KiB)", "raw tokens", "digest tokens", "saved"], kinds)}\n\n`);
  process.stdout.write(
    `Added to a tool call (measure, digest, measure; all outputs and rounds): p50 ${fmt(quantile(sorted, 0.5))} ms, p99 ${fmt(quantile(sorted, 0.99))} ms, max ${fmt(sorted.at(-1) ?? Number.NaN)} ms\n`,
  );
}

await main();
