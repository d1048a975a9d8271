/**
 * Tool-output digests through a real daemon and the real server-filesystem (D352-D355): with no
 * flag set, a large directory tree (JSON) and a large log reach the model as structural digests
 * with `savings` on their rows, a small result passes through; /usage.digest_methods and
 * /context.digest_savings count them, the same after a restart; the raw result is read back
 * whole from /tool-results/{call_id}/raw. With --tools-digest=agentic a tool-less model call
 * summarizes the result and its tokens and cost are counted into the session.
 */
import { afterEach, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startDaemon, tempDir } from "../../support/daemon.ts";
import { say as sayWith } from "../../support/scripted.ts";
import {
  FILESYSTEM,
  call,
  runTurn,
  say,
  settled,
  startWithCatalog,
  stopAll,
  toolResults,
} from "../../fixtures/mcp/harness.ts";

afterEach(stopAll);

/** A workspace with 20 folders of 15 files each, a 60 KiB log and a small note. */
function workspace(): string {
  const root = tempDir("spar-digest-");
  for (let d = 0; d < 20; d++) {
    mkdirSync(join(root, `pkg-${d}`));
    for (let f = 0; f < 15; f++) writeFileSync(join(root, `pkg-${d}`, `module-${f}.ts`), "export {};\n");
  }
  const log = Array.from({ length: 1200 }, (_, i) =>
    i === 700
      ? "2026-11-28T10:11:40Z ERROR upstream refused connection"
      : `2026-11-28T10:${String(Math.floor(i / 60) % 60).padStart(2, "0")}:${String(i % 60).padStart(2, "0")}Z INFO request ${i} served in ${i % 9}ms`,
  ).join("\n");
  writeFileSync(join(root, "server.log"), log);
  writeFileSync(join(root, "note.txt"), "small\n");
  return root;
}

const catalog = (root: string) => ({
  version: 1,
  servers: { fs: { transport: "stdio", command: process.execPath, args: [FILESYSTEM, root], env_mode: "clean" } },
});

interface Savings {
  path: string;
  original_bytes: number;
  digest_bytes: number;
  original_tokens_est: number;
  digest_tokens_est: number;
}

const getJson = async (url: string) => {
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

test("default: large JSON and log results are digested structurally with savings, small ones pass through; counted on /usage and /context across a restart; the raw result is readable", async () => {
  const root = workspace();
  const running = await startWithCatalog(
    catalog(root),
    [
      call("fs__directory_tree", { path: root }),
      call("fs__read_text_file", { path: join(root, "server.log") }),
      call("fs__read_text_file", { path: join(root, "note.txt") }),
      say("done"),
    ],
    ["--permission-mode=yolo"],
  );
  await settled(running.base);
  expect((await runTurn(running)).event).toBe("turn-complete");
  const [tree, log, note] = toolResults(running.events);
  for (const digested of [tree, log]) {
    const response = digested?.response as Record<string, unknown>;
    expect(response.method).toBe("structural");
    expect(typeof response.digest).toBe("string");
    expect(typeof response.call_id).toBe("string");
    expect(response.content).toBeUndefined();
    const savings = response.savings as Savings;
    expect(savings).toMatchObject({ path: "structural", original_bytes: response.raw_bytes });
    expect(savings.digest_tokens_est).toBeLessThan(savings.original_tokens_est * 0.4);
  }
  expect(tree?.response.digest_meta).toMatchObject({ field: "content", kind: "json" });
  expect(String(tree?.response.digest)).toContain("more items");
  expect(log?.response.digest_meta).toMatchObject({ kind: "log" });
  expect(String(log?.response.digest)).toContain("ERROR upstream refused connection");
  expect(note?.response).toMatchObject({ content: "small\n" });
  expect(note?.response.savings).toBeUndefined();

  const counted = async (base: string) => {
    const usage = (await getJson(`${base}/usage`)).body;
    const context = (await getJson(`${base}/context`)).body;
    return { methods: usage.digest_methods, savings: context.digest_savings };
  };
  const before = await counted(running.base);
  const treeSavings = tree?.response.savings as Savings;
  const logSavings = log?.response.savings as Savings;
  expect(before.methods).toEqual({
    counts: { structural: 2, passthrough: 1 },
    bytes_saved: {
      structural:
        treeSavings.original_bytes - treeSavings.digest_bytes + logSavings.original_bytes - logSavings.digest_bytes,
    },
  });
  expect(before.savings).toMatchObject({
    structural_calls: 2,
    structural_tokens_saved:
      treeSavings.original_tokens_est -
      treeSavings.digest_tokens_est +
      logSavings.original_tokens_est -
      logSavings.digest_tokens_est,
    agentic_calls: 0,
    passthrough_calls: 1,
  });

  // Nothing the tool returned is lost: the raw result, whole.
  const raw = await getJson(`${running.base}/tool-results/${String(tree?.response.call_id)}/raw`);
  expect(raw.status).toBe(200);
  expect(raw.body).toMatchObject({
    name: "fs__directory_tree",
    method: "structural",
    raw_bytes: treeSavings.original_bytes,
  });
  const entries = JSON.parse(String((raw.body.output as { content: string }).content)) as unknown[];
  expect(entries).toHaveLength(22);
  const rawLog = await getJson(`${running.base}/tool-results/${String(log?.response.call_id)}/raw`);
  expect(String((rawLog.body.output as { content: string }).content).split("\n")).toHaveLength(1200);
  expect((await getJson(`${running.base}/tool-results/no-such-call/raw`)).status).toBe(404);

  // Rebuilt from the log after a restart.
  expect(await running.daemon.sigterm()).toBe(0);
  const again = await startDaemon({ sessionDb: running.daemon.sessionDb, args: ["--model=echo"] });
  try {
    expect(await counted(`${again.baseUrl}/sessions/default`)).toEqual(before);
  } finally {
    await again.sigterm();
  }
}, 60_000);

test("agentic: a tool-less model call summarizes the result; its tokens and cost are counted into the session", async () => {
  const root = workspace();
  const summaryUsage = { usageMetadata: { promptTokenCount: 900, candidatesTokenCount: 40, totalTokenCount: 940 } };
  const running = await startWithCatalog(
    catalog(root),
    [
      call("fs__directory_tree", { path: root }),
      sayWith("20 packages pkg-0..pkg-19, 15 TypeScript modules each; plus server.log and note.txt", summaryUsage),
      say("done"),
    ],
    ["--permission-mode=yolo", "--tools-digest=agentic", "--tools-digest-threshold=4096"],
  );
  await settled(running.base);
  expect((await runTurn(running)).event).toBe("turn-complete");
  const [tree] = toolResults(running.events);
  expect(tree?.response).toMatchObject({
    method: "agentic",
    digest: "20 packages pkg-0..pkg-19, 15 TypeScript modules each; plus server.log and note.txt",
    savings: { path: "agentic", subagent_input_tokens: 900, subagent_output_tokens: 40 },
  });
  const context = (await getJson(`${running.base}/context`)).body;
  expect(context.digest_savings).toMatchObject({
    agentic_calls: 1,
    agentic_subagent_input_tokens: 900,
    agentic_subagent_output_tokens: 40,
    structural_calls: 0,
  });
  const usage = (await getJson(`${running.base}/usage`)).body as {
    overall: { input_tokens: number };
    digest_methods: unknown;
  };
  expect(usage.digest_methods).toMatchObject({ counts: { agentic: 1 } });
  expect(usage.overall.input_tokens).toBeGreaterThanOrEqual(900);
}, 60_000);

test("a server marked no_digest: its large results reach the model whole, counted as passthrough", async () => {
  const root = workspace();
  const marked = catalog(root);
  const running = await startWithCatalog(
    { ...marked, servers: { fs: { ...marked.servers.fs, no_digest: true } } },
    [call("fs__read_text_file", { path: join(root, "server.log") }), say("done")],
    ["--permission-mode=yolo"],
  );
  await settled(running.base);
  expect((await runTurn(running)).event).toBe("turn-complete");
  const [log] = toolResults(running.events);
  const response = log?.response as Record<string, unknown>;
  expect(response.digest).toBeUndefined();
  expect(response.savings).toBeUndefined();
  expect(JSON.stringify(response)).toContain("ERROR upstream refused connection");
  const usage = (await getJson(`${running.base}/usage`)).body as {
    digest_methods?: { counts?: Record<string, number> };
  };
  expect(usage.digest_methods?.counts).toEqual({ passthrough: 1 });
});
