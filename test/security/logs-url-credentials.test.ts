/**
 * Credentials written into a URL never reach a log line or an answer in clear: the daemon's
 * logger redacts userinfo and `password=` query parameters in every line (whichever module wrote it), the pricing source is shown
 * redacted on GET /pricing and in refresh failures, and a startup refusal quoting a URL is
 * redacted too.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { createLogger } from "../../src/telemetry/logger.ts";
import { runToExit } from "../support/daemon-scope.ts";
import { type Daemon, postJson, sparCommand, startDaemon, tempDir, waitFor } from "../support/daemon.ts";

const SECRET = "hunter2-do-not-log";
let daemon: Daemon;
let closedPort: number;

beforeAll(async () => {
  const probe = Bun.serve({ port: 0, fetch: () => new Response("") });
  closedPort = probe.port ?? 1;
  await probe.stop(true);
  daemon = await startDaemon({ args: [`--pricing-source=http://admin:${SECRET}@127.0.0.1:${closedPort}/prices.json`] });
});
afterAll(async () => {
  await daemon.sigterm();
});

test("the refresh at start fails on a URL with credentials: its log line shows *** instead", async () => {
  const line = await waitFor(
    () =>
      daemon
        .log()
        .split("\n")
        .find((candidate) => candidate.includes("pricing refresh at start")),
    10_000,
    "the refresh log line",
  );
  expect(line).toContain(`http://***@127.0.0.1:${closedPort}/prices.json`);
  expect(daemon.log()).not.toContain(SECRET);
});

test("GET /pricing and a refresh answer show the source redacted", async () => {
  const info = (await (await fetch(`${daemon.baseUrl}/sessions/default/pricing`)).json()) as { source: string };
  expect(info.source).toBe(`http://***@127.0.0.1:${closedPort}/prices.json`);
  const refresh = await postJson(`${daemon.baseUrl}/sessions/default/pricing/refresh`);
  const text = await refresh.text();
  expect(text).not.toContain(SECRET);
  expect(text).toContain("***@");
});

test("a startup refusal quoting a URL with credentials is redacted", async () => {
  // The process's own output is the point here: the command redacts what it prints (exit 2).
  const dir = tempDir();
  const refused = await runToExit(
    sparCommand(
      "agent",
      "--attach-listen=127.0.0.1:0",
      `--session-db=${join(dir, "s.db")}`,
      `--outbound-allow=https://root:${SECRET}@bad.example/`,
    ),
  );
  expect(refused.code).toBe(2);
  expect(refused.stderr).toContain("--outbound-allow");
  expect(refused.stderr).not.toContain(SECRET);
});

test("the logger redacts any line, whoever wrote it", () => {
  const lines: string[] = [];
  const logger = createLogger("debug", (line) => lines.push(line));
  logger.warn(`sink https://bot:${SECRET}@hooks.example/x refused: 503`);
  logger.info("a line with an address user@example.com and no URL stays");
  // libpq's spelling of a password in a postgres:// URL (D483): no userinfo, no "@".
  logger.error(`cannot open session store postgres://db.example/spar?password=${SECRET}&sslmode=require`);
  expect(lines[0]).toContain("https://***@hooks.example/x refused: 503");
  expect(lines.join("")).not.toContain(SECRET);
  expect(lines[1]).toContain("user@example.com");
  expect(lines[2]).toContain("postgres://db.example/spar?password=***&sslmode=require");
});
