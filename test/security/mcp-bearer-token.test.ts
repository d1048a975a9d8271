/**
 * Attacks on the ambient-credential bearer of `auth.google_oauth` tool servers: the token goes
 * only to the server that declared it. A redirect to another origin is not followed (the SDK's
 * same-origin redirect policy; Bun's fetch also drops Authorization across origins), and a
 * server of the same catalog without `auth` never sees it.
 */
import { afterEach, expect, test } from "bun:test";
import type { HttpServer } from "../../src/mcp/catalog.ts";
import { ServerPool } from "../../src/mcp/server-pool.ts";
import { DEFAULT_MCP_TIMEOUTS } from "../../src/mcp/types.ts";
import { tempDir } from "../support/daemon.ts";
import { recordingMcpServer } from "../fixtures/mcp/recording-http-server.ts";
import { ambientEnvironment, fakeMetadataServer, useEnvironment } from "../fixtures/mcp/google-token-endpoints.ts";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A tool server recording the Authorization header of every request it gets. */
async function recordingServer(hostname: string) {
  const server = await recordingMcpServer(hostname);
  cleanups.push(() => server.stop());
  return server;
}

function withMetadataToken(): void {
  const metadata = fakeMetadataServer("secret-bearer");
  cleanups.push(metadata.stop);
  cleanups.push(useEnvironment(ambientEnvironment({ metadataHost: metadata.address, detection: "assume-present" })));
}

async function pool(servers: HttpServer[]): Promise<ServerPool> {
  const held = new ServerPool(process.env, tempDir());
  cleanups.push(() => held.stopAll());
  await held.configure({ servers, timeouts: { ...DEFAULT_MCP_TIMEOUTS, startMs: 10_000, callMs: 10_000 } });
  return held;
}

const never = new AbortController().signal;

test("a tool server redirecting to another origin: the redirect is not followed, the bearer never reaches that origin", async () => {
  withMetadataToken();
  const elsewhere = await recordingServer("localhost");
  const redirector = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => new Response(null, { status: 307, headers: { location: elsewhere.url } }),
  });
  cleanups.push(() => redirector.stop(true));
  const servers = await pool([
    {
      name: "web",
      transport: "http",
      url: `http://127.0.0.1:${redirector.port}/mcp`,
      googleOauthScopes: [],
      overrides: {},
    },
  ]);
  const [state] = await servers.discover();
  expect(state).toMatchObject({ name: "web", status: "failed" });
  expect(state?.error).toContain("not followed");
  expect((await servers.call("web", "ping", {}, never)).isError).toBe(true);
  expect(elsewhere.authorizations.filter((header) => header.includes("secret-bearer"))).toEqual([]);
});

test("a server of the same catalog without auth never receives another server's bearer", async () => {
  withMetadataToken();
  const authenticated = await recordingServer("127.0.0.1");
  const open = await recordingServer("127.0.0.1");
  const servers = await pool([
    { name: "auth", transport: "http", url: authenticated.url, googleOauthScopes: [], overrides: {} },
    { name: "open", transport: "http", url: open.url, overrides: {} },
  ]);
  await servers.discover();
  expect((await servers.call("auth", "ping", {}, never)).isError).toBe(false);
  expect((await servers.call("open", "ping", {}, never)).isError).toBe(false);
  expect(new Set(authenticated.authorizations)).toEqual(new Set(["Bearer secret-bearer"]));
  expect(new Set(open.authorizations)).toEqual(new Set(["(none)"]));
});
