/**
 * A tool server call's client span, after the OpenTelemetry MCP conventions (D327): `tools/call
 * <tool>` (kind CLIENT) under the `execute_tool` span, with `mcp.method.name`, `gen_ai.tool.name`
 * (the server's own name for the tool), `gen_ai.operation.name`, `network.transport` (`pipe` for
 * stdio, `tcp` for streamable HTTP) and spar's `spar.mcp.server`. The call runs with it active, so
 * the context handed to the tool-host worker (and from there the HTTP request's `traceparent` and
 * the request's `params._meta`) is this span's. A result with `isError` is an error span
 * (`error.type` `tool_error`). Off, or outside any span: the call alone.
 */
import { SpanKind, context, trace } from "@opentelemetry/api";
import { markToolError, runInSpan } from "./span-failure.ts";
import { activeTracer } from "./telemetry.ts";

export interface McpCallTarget {
  server: string;
  /** The server's own name for the tool. */
  tool: string;
  transport: "stdio" | "http";
}

export async function mcpCallSpan<T extends { isError: boolean }>(
  target: McpCallTarget,
  call: () => Promise<T>,
): Promise<T> {
  const tracer = activeTracer();
  const parent = context.active();
  if (tracer === undefined || trace.getSpan(parent) === undefined) return call();
  const span = tracer.startSpan(
    `tools/call ${target.tool}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": target.tool,
        "network.transport": target.transport === "stdio" ? "pipe" : "tcp",
        "spar.mcp.server": target.server,
      },
    },
    parent,
  );
  return runInSpan(span, parent, call, (result) => {
    if (result.isError) markToolError(span);
  });
}
