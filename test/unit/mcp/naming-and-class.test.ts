/**
 * Model-facing MCP tool names (`<server>__<tool>`, provider-safe characters, 64 at most), the
 * class rule (mutating unless readOnlyHint is true or an override says read-only), the stdio
 * environment modes, and how a CallToolResult becomes the row the model reads.
 */
import { expect, test } from "bun:test";
import { classifyMcpTool } from "../../../src/core/tool-class.ts";
import { mcpToolName } from "../../../src/mcp/mcp-manager.ts";
import { stdioEnvironment, toRunResult } from "../../../src/mcp/server-connection.ts";

test("names: server__tool, other characters become _, cut at 64", () => {
  expect(mcpToolName("fs", "read_file")).toBe("fs__read_file");
  expect(mcpToolName("my.server", "get-sum")).toBe("my_server__get-sum");
  expect(mcpToolName("a", "x".repeat(100))).toHaveLength(64);
});

test("class: readOnlyHint true is read-only; absent, false or destructive is mutating; an override wins both ways", () => {
  expect(classifyMcpTool({ readOnlyHint: true }, undefined)).toBe("read-only");
  expect(classifyMcpTool(undefined, undefined)).toBe("mutating");
  expect(classifyMcpTool({ readOnlyHint: false, destructiveHint: false }, undefined)).toBe("mutating");
  expect(classifyMcpTool({ destructiveHint: true }, false)).toBe("read-only");
  expect(classifyMcpTool({ readOnlyHint: true }, true)).toBe("mutating");
});

test("stdio environment: inherit layers env over everything; clean keeps PATH and the passthrough only", () => {
  const base = { PATH: "/bin", HOME: "/home/a", SECRET: "s" };
  const server = {
    name: "a",
    transport: "stdio" as const,
    command: "x",
    args: [],
    envPassthrough: [],
    env: { K: "v" },
    overrides: {},
  };
  expect(stdioEnvironment({ ...server, envMode: "inherit" }, base)).toEqual({
    PATH: "/bin",
    HOME: "/home/a",
    SECRET: "s",
    K: "v",
  });
  expect(stdioEnvironment({ ...server, envMode: "clean", envPassthrough: ["HOME", "MISSING"] }, base)).toEqual({
    PATH: "/bin",
    HOME: "/home/a",
    K: "v",
  });
});

test("results: text joined, other blocks and structured content kept, isError becomes error", () => {
  expect(
    toRunResult({
      content: [
        { type: "text", text: "a" },
        { type: "text", text: "b" },
      ],
    }),
  ).toEqual({ output: { content: "a\nb" }, isError: false });
  expect(
    toRunResult({ content: [{ type: "image", data: "x", mimeType: "image/png" }], structuredContent: { n: 1 } }),
  ).toEqual({
    output: { content: "", blocks: [{ type: "image", data: "x", mimeType: "image/png" }], structured: { n: 1 } },
    isError: false,
  });
  expect(toRunResult({ content: [{ type: "text", text: "nope" }], isError: true })).toEqual({
    output: { error: "nope" },
    isError: true,
  });
});
