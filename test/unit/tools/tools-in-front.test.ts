import { expect, test } from "bun:test";
import type { ToolCall } from "../../../src/core/events.ts";
import type { ToolSpec } from "../../../src/core/model.ts";
import type { ToolCatalog, ToolRunResult, ToolRunner } from "../../../src/core/tool-catalog.ts";
import { ToolsInFront } from "../../../src/tools/tools-in-front.ts";

const spec = (name: string): ToolSpec => ({ name, description: `${name} tool`, inputSchema: { type: "object" } });
const answer = (by: string): ToolRunResult => ({ output: { by }, isError: false });

function inner(names: string[]): ToolRunner & ToolCatalog {
  return {
    has: (name) => names.includes(name),
    classOf: (name) => (names.includes(name) ? "read-only" : undefined),
    run: async () => answer("inner"),
    specs: () => names.map(spec),
    list: () => names.map((name) => ({ name, description: `${name} tool`, source: "builtin" as const })),
  } as ToolRunner & ToolCatalog;
}

const call = (name: string): ToolCall => ({ callId: "c1", name, args: {} });

test("the front answers for the tools it offers now, shadowing the inner tool of the same name; the rest goes inside", async () => {
  let offered = true;
  const tools = new ToolsInFront(inner(["read_file", "call_a2a"]), {
    specs: () => (offered ? [spec("call_a2a")] : []),
    toolClass: "mutating",
    source: "other",
    run: () => answer("front"),
  });
  expect(tools.specs().map((entry) => entry.name)).toEqual(["read_file", "call_a2a"]);
  expect(tools.list().map((entry) => [entry.name, entry.source])).toEqual([
    ["read_file", "builtin"],
    ["call_a2a", "other"],
  ]);
  expect(tools.classOf("call_a2a")).toBe("mutating");
  expect((await tools.run(call("call_a2a"), new AbortController().signal)).output).toEqual({ by: "front" });
  expect((await tools.run(call("read_file"), new AbortController().signal)).output).toEqual({ by: "inner" });
  offered = false;
  expect(tools.classOf("call_a2a")).toBe("read-only");
  expect((await tools.run(call("call_a2a"), new AbortController().signal)).output).toEqual({ by: "inner" });
});
