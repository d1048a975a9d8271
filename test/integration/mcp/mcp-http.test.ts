/**
 * A streamable-HTTP tool server in this test process (the SDK's McpServer on Bun.serve, port 0)
 * reached by a real daemon: ambient-credential auth (google-auth-library takes the token from a
 * fake metadata server, the server checks it), a tool listed and called through a turn, a 503 whose JSON explanation
 * reaches the model, an oversized error body cut to the status line, the session living on; a
 * server refusing initialize with 401 shows failed on /mcp with its explanation.
 */
import { afterEach, expect, test } from "bun:test";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { z } from "zod";
import { waitFor } from "../../support/daemon.ts";
import {
  call,
  runTurn,
  say,
  settled,
  startWithCatalog,
  stopAll,
  toolResults,
  toolRows,
} from "../../fixtures/mcp/harness.ts";
import { ambientEnvironment, fakeMetadataServer } from "../../fixtures/mcp/google-token-endpoints.ts";

const servers: Array<{ stop(force?: boolean): unknown }> = [];
afterEach(async () => {
  await stopAll();
  for (const server of servers.splice(0)) server.stop(true);
});

async function toolServer() {
  const mcp = new McpServer({ name: "web-fixture", version: "1.0.0" });
  mcp.registerTool(
    "lookup",
    { description: "looks a key up", inputSchema: { key: z.string() }, annotations: { readOnlyHint: true } },
    async ({ key }) => ({ content: [{ type: "text", text: `value of ${key}` }] }),
  );
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => crypto.randomUUID() });
  await mcp.connect(transport);
  const state = { refuse: "none" as "none" | "json" | "big", authorizations: [] as string[] };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (request) => {
      const path = new URL(request.url).pathname;
      const auth = request.headers.get("authorization") ?? "";
      if (path === "/locked")
        return Response.json({ error: "invalid_token", detail: "no credentials" }, { status: 401 });
      state.authorizations.push(auth);
      if (auth !== "Bearer tok-123") return Response.json({ error: "unauthenticated" }, { status: 401 });
      if (request.method === "POST" && state.refuse === "json")
        return Response.json({ error: "maintenance", retry_after_s: 5 }, { status: 503 });
      if (request.method === "POST" && state.refuse === "big")
        return Response.json({ error: "x".repeat(40 * 1024) }, { status: 500 });
      return transport.handleRequest(request);
    },
  });
  servers.push(server);
  return { url: `http://127.0.0.1:${server.port}`, state };
}

function metadataServer() {
  const metadata = fakeMetadataServer();
  servers.push(metadata);
  return metadata;
}

test("an http server with ambient credentials: listed and called; a 503 carries its JSON explanation, an oversized body only the status line; the session lives", async () => {
  const web = await toolServer();
  const metadata = metadataServer();
  const catalog = {
    version: 1,
    servers: {
      web: {
        transport: "http",
        url: `${web.url}/mcp`,
        auth: { google_oauth: { scopes: ["https://www.googleapis.com/auth/userinfo.email"] } },
      },
    },
  };
  const lines = [
    call("web__lookup", { key: "alpha" }),
    say("one"),
    call("web__lookup", { key: "beta" }),
    say("two"),
    call("web__lookup", { key: "gamma" }),
    say("three"),
  ];
  const running = await startWithCatalog(catalog, lines, ["--permission-mode=yolo"], {
    ...ambientEnvironment({ metadataHost: metadata.address }),
  });
  const [row] = await settled(running.base);
  expect(row).toMatchObject({
    name: "web",
    status: "ready",
    transport: "http",
    tools: [{ name: "lookup", description: "looks a key up" }],
  });
  expect(metadata.asked).toEqual(["https://www.googleapis.com/auth/userinfo.email"]);
  expect(web.state.authorizations.length).toBeGreaterThan(0);
  expect(web.state.authorizations.every((auth) => auth === "Bearer tok-123")).toBe(true);
  expect((await toolRows(running.base)).find((tool) => tool.name === "web__lookup")).toMatchObject({
    source: "mcp",
    server: "web",
    read_only: true,
  });
  expect((await runTurn(running)).event).toBe("turn-complete");
  expect(toolResults(running.events)[0]).toMatchObject({
    name: "web__lookup",
    response: { content: "value of alpha" },
  });
  web.state.refuse = "json";
  expect((await runTurn(running, "again")).event).toBe("turn-complete");
  expect(toolResults(running.events)[1]?.response.error).toBe(
    'tool server web: tool server answered HTTP 503 Service Unavailable: {"error":"maintenance","retry_after_s":5}',
  );
  web.state.refuse = "big";
  expect((await runTurn(running, "third")).event).toBe("turn-complete");
  expect(toolResults(running.events)[2]?.response.error).toBe(
    "tool server web: tool server answered HTTP 500 Internal Server Error",
  );
  // The token was fetched once and cached.
  expect(metadata.asked).toHaveLength(1);
}, 30_000);

test("an http server that refuses initialize with 401 shows failed on /mcp with its JSON explanation", async () => {
  const web = await toolServer();
  const running = await startWithCatalog(
    { version: 1, servers: { locked: { transport: "http", url: `${web.url}/locked` } } },
    [say("unused")],
  );
  const [row] = await settled(running.base);
  expect(row).toMatchObject({ name: "locked", status: "failed", transport: "http" });
  expect(row?.error).toContain('HTTP 401 Unauthorized: {"error":"invalid_token","detail":"no credentials"}');
}, 30_000);

test("a server that is down at startup joins once reachable: a /tools read past --mcp-retry-interval starts it again", async () => {
  const web = await toolServer();
  const metadata = metadataServer();
  web.state.refuse = "json";
  const catalog = {
    version: 1,
    servers: { web: { transport: "http", url: `${web.url}/mcp`, auth: { google_oauth: { scopes: [] } } } },
  };
  const running = await startWithCatalog(catalog, [say("unused")], ["--mcp-retry-interval=300ms"], {
    ...ambientEnvironment({ metadataHost: metadata.address }),
  });
  const [down] = await settled(running.base);
  expect(down).toMatchObject({ status: "failed" });
  expect(down?.error).toContain("HTTP 503 Service Unavailable");
  expect(metadata.asked).toEqual(["https://www.googleapis.com/auth/cloud-platform"]);
  web.state.refuse = "none";
  const tools = await waitFor(
    async () => {
      const rows = await toolRows(running.base);
      return rows.some((tool) => tool.name === "web__lookup") ? rows : undefined;
    },
    10_000,
    "the server's tools after it came back",
  );
  expect(tools.find((tool) => tool.name === "web__lookup")).toMatchObject({ source: "mcp", server: "web" });
  expect((await settled(running.base))[0]).toMatchObject({ status: "ready" });
}, 30_000);
