/**
 * Tool server calls in the trace (issue 18 item 2, D327), from a real daemon to a local OTLP
 * receiver: a call to a streamable-HTTP server (the SDK's McpServer on Bun.serve) and one to a
 * stdio server (the fixture) are each a `tools/call <tool>` client span under their
 * `execute_tool` span, naming the server and the transport; the HTTP request's `traceparent` and
 * the request's `params._meta` (the MCP conventions' carrier, which a stdio server sees too) carry
 * that span's context; a tool answering `isError` makes an error span. With telemetry off the
 * `_meta` carries no trace keys.
 */
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { z } from "zod";
import { FIXTURE, call, runTurn, say, startWithCatalog, stopAll, toolResults } from "../../fixtures/mcp/harness.ts";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../../support/otlp-receiver.ts";

let receiver: OtlpReceiver;
const servers: Array<{ stop(force?: boolean): unknown }> = [];
beforeAll(() => {
  receiver = startOtlpReceiver();
});
afterEach(async () => {
  await stopAll();
  for (const server of servers.splice(0)) server.stop(true);
});
afterAll(async () => receiver.stop());

const exporting = () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "50" });

/** A streamable-HTTP tool server recording each POST's traceparent and each call's `_meta`. */
async function webServer() {
  const seen = { traceparents: [] as string[], metas: [] as Array<Record<string, unknown>> };
  const mcp = new McpServer({ name: "web-fixture", version: "1.0.0" });
  mcp.registerTool(
    "lookup",
    { description: "looks a key up", inputSchema: { key: z.string() }, annotations: { readOnlyHint: true } },
    async ({ key }, extra) => {
      seen.metas.push({ ...extra._meta });
      return key === "missing"
        ? { content: [{ type: "text", text: `no ${key}` }], isError: true }
        : { content: [{ type: "text", text: `value of ${key}` }] };
    },
  );
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => crypto.randomUUID() });
  await mcp.connect(transport);
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request) => {
      const traceparent = request.headers.get("traceparent");
      if (request.method === "POST" && traceparent) seen.traceparents.push(traceparent);
      return transport.handleRequest(request);
    },
  });
  servers.push(server);
  return { url: `http://127.0.0.1:${server.port}/mcp`, seen };
}

const spanId = (traceparent: unknown) => (typeof traceparent === "string" ? traceparent.slice(36, 52) : "");
const named = (name: string) => (spans: ReceivedSpan[]) => spans.filter((span) => span.name === name);

test("an HTTP tool server's call: a tools/call client span under execute_tool, carried by the request and its _meta", async () => {
  const web = await webServer();
  const running = await startWithCatalog(
    { version: 1, servers: { web: { transport: "http", url: web.url } } },
    [call("web__lookup", { key: "alpha" }), call("web__lookup", { key: "missing" }), say("done")],
    ["--permission-mode=yolo"],
    exporting(),
  );
  expect((await runTurn(running)).event).toBe("turn-complete");
  const spans = await receiver.waitForSpans((all) => named("tools/call lookup")(all).length >= 2);
  const calls = named("tools/call lookup")(spans);
  const tools = named("execute_tool web__lookup")(spans);
  expect(calls).toHaveLength(2);
  for (const span of calls) {
    expect(span.kind).toBe(3); // CLIENT, as OTLP numbers it
    expect(span.attributes).toMatchObject({
      "mcp.method.name": "tools/call",
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "lookup",
      "network.transport": "tcp",
      "spar.mcp.server": "web",
    });
    expect(tools.map((tool) => tool.spanId)).toContain(span.parentSpanId);
  }
  // The second call answered isError: its span alone is an error.
  const failed = calls.filter((span) => span.statusCode === 2);
  expect(failed).toHaveLength(1);
  expect(failed[0]?.attributes["error.type"]).toBe("tool_error");
  // The calls' requests and their _meta named the tools/call spans.
  const callIds = calls.map((span) => span.spanId).sort();
  expect(web.seen.metas.map((meta) => spanId(meta.traceparent)).sort()).toEqual(callIds);
  for (const id of callIds) expect(web.seen.traceparents.map(spanId)).toContain(id);
}, 30_000);

test("a stdio tool server's call: the pipe transport, and the _meta the server reads names the span", async () => {
  const running = await startWithCatalog(
    { version: 1, servers: { fx: { transport: "stdio", command: process.execPath, args: [FIXTURE] } } },
    [call("fx__meta", {}), say("done")],
    ["--permission-mode=yolo"],
    exporting(),
  );
  expect((await runTurn(running)).event).toBe("turn-complete");
  const spans = await receiver.waitForSpans((all) => named("tools/call meta")(all).length >= 1);
  const [span] = named("tools/call meta")(spans);
  expect(span?.attributes).toMatchObject({ "network.transport": "pipe", "spar.mcp.server": "fx" });
  const [tool] = named("execute_tool fx__meta")(spans);
  expect(span?.parentSpanId).toBe(tool?.spanId ?? "?");
  const meta = JSON.parse(String(toolResults(running.events)[0]?.response.content)) as Record<string, unknown>;
  expect(meta.traceparent).toBe(`00-${span?.traceId}-${span?.spanId}-01`);
}, 30_000);

test("with telemetry off the tool server's _meta carries no trace keys", async () => {
  const running = await startWithCatalog(
    { version: 1, servers: { fx: { transport: "stdio", command: process.execPath, args: [FIXTURE] } } },
    [call("fx__meta", {}), say("done")],
    ["--permission-mode=yolo"],
  );
  expect((await runTurn(running)).event).toBe("turn-complete");
  const meta = JSON.parse(String(toolResults(running.events)[0]?.response.content)) as Record<string, unknown>;
  expect(meta.traceparent).toBeUndefined();
  expect(meta.tracestate).toBeUndefined();
}, 30_000);
