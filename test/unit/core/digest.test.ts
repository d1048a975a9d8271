import { describe, expect, test } from "bun:test";
import { digestJson } from "../../../src/core/digest-json.ts";
import { digestLog, digestTable, tableHeader } from "../../../src/core/digest-text.ts";
import { measure, reduceText, structuralDigest, utf8Length } from "../../../src/core/digest.ts";
import { estimateTokens } from "../../../src/core/usage.ts";

const files = Array.from({ length: 400 }, (_, i) => ({
  name: `file-${i}.ts`,
  size: 1000 + i,
  modified: `2026-11-${String((i % 28) + 1).padStart(2, "0")}T10:00:00Z`,
  kind: "file",
}));

const log = [
  "2026-11-28T10:00:00.001Z INFO starting server on :8080",
  ...Array.from(
    { length: 900 },
    (_, i) => `2026-11-28T10:00:${String(i % 60).padStart(2, "0")}.${i}Z DEBUG poll ${i} ok`,
  ),
  "2026-11-28T10:15:00.000Z ERROR connection refused by upstream db-7",
  ...Array.from(
    { length: 300 },
    (_, i) => `2026-11-28T10:16:00.${i}Z INFO request ${i} took ${i % 7}ms path=/api/v1/items/${i * 13}`,
  ),
  "2026-11-28T10:20:00.000Z WARN queue depth 9000 above 5000",
  "2026-11-28T10:21:00.000Z INFO shutting down",
].join("\n");

const saved = (before: string, after: string) => 1 - estimateTokens(after) / estimateTokens(before);

describe("JSON", () => {
  test("a long array keeps its head and tail around a count, and names the shape all items share", () => {
    const digest = digestJson({ files, total: 400 }, 100_000);
    const reduced = JSON.parse(digest.text) as { files: unknown[]; total: number };
    expect(reduced.total).toBe(400);
    expect(reduced.files).toHaveLength(6 + 1 + 2);
    expect(reduced.files[0]).toEqual(files[0]);
    expect(reduced.files[8]).toEqual(files[399]);
    expect(reduced.files[6]).toBe("…[392 more items; all 400 are objects with keys name,size,modified,kind]");
    expect(digest.elisions).toEqual({ elided_items: 392, cut_strings: 0, elided_keys: 0, uniform_arrays: 1 });
  });

  test("long strings are cut with a marker, many keys are counted, deep nesting is named", () => {
    const wide = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i]));
    let deep: unknown = { leaf: true };
    for (let i = 0; i < 12; i++) deep = { down: deep };
    const reduced = JSON.parse(digestJson({ text: "a".repeat(1000), wide, deep }, 100_000).text);
    expect(reduced.text).toBe(`${"a".repeat(240)}…[+760 chars]`);
    expect(Object.keys(reduced.wide)).toHaveLength(33);
    expect(reduced.wide["…"]).toStartWith("18 more keys: k32, k33");
    expect(JSON.stringify(reduced.deep)).toContain("…[object with 1 keys]");
  });

  test("a tight budget tightens the level; the same input gives the same digest", () => {
    const loose = digestJson(files, 100_000);
    const tight = digestJson(files, 200);
    expect(loose.level).toBe(0);
    expect(tight.level).toBe(2);
    expect(tight.text.length).toBeLessThan(loose.text.length);
    expect(digestJson(files, 200)).toEqual(tight);
  });
});

describe("logs and tables", () => {
  test("runs of lines differing only in numbers collapse with a count; problem lines in the middle are kept", () => {
    const digest = digestLog(log.split("\n"), 100_000);
    expect(digest.text).toContain("DEBUG poll 0 ok …[×900 similar lines]");
    expect(digest.text).toContain("ERROR connection refused by upstream db-7");
    expect(digest.text).toContain("WARN queue depth 9000 above 5000");
    expect(digest.text).toContain("shutting down");
    expect(digest.elisions.collapsed_runs).toBeGreaterThan(0);
  });

  test("a long log keeps head, problem lines and tail; every gap says how many lines it stands for", () => {
    const lines = Array.from({ length: 5000 }, (_, i) =>
      i === 2500 ? "FATAL disk full" : `line ${"abcdefghij"[i % 10]} ${"klmnopqrst"[Math.floor(i / 10) % 10]}`,
    );
    const digest = digestLog(lines, 100_000);
    const text = digest.text.split("\n");
    expect(text[0]).toBe(lines[0]);
    expect(text.at(-1)).toBe(lines[4999]);
    expect(text).toContain("FATAL disk full");
    const gaps = text.filter((line) => line.startsWith("…[")).map((line) => Number(/\d+/.exec(line)?.[0]));
    expect(gaps.reduce((a, b) => a + b, 0) + text.length - gaps.length).toBe(5000);
  });

  test("a table keeps its header and rule, head and tail rows, and counts the rows between", () => {
    const table = ["| name | size |", "|------|------|", ...files.map((file) => `| ${file.name} | ${file.size} |`)];
    expect(tableHeader(table)).toBe(2);
    const digest = digestTable(table, 2, 100_000);
    const lines = digest.text.split("\n");
    expect(lines.slice(0, 3)).toEqual(table.slice(0, 3));
    expect(lines).toContain("…[375 rows elided of 400]");
    expect(lines.at(-1)).toBe(table.at(-1) as string);
    expect(tableHeader(log.split("\n"))).toBeUndefined();
  });
});

describe("results", () => {
  test("reduceText tells JSON, tables, logs and plain text apart", () => {
    expect(reduceText(JSON.stringify(files, null, 2)).kind).toBe("json");
    expect(reduceText(log).kind).toBe("log");
    expect(
      reduceText(["a\tb\tc", ...files.map((file) => `${file.name}\t${file.size}\t${file.kind}`)].join("\n")).kind,
    ).toBe("table");
    const prose = reduceText("word ".repeat(10_000));
    expect(prose.kind).toBe("text");
    expect(prose.text).toContain("chars elided]");
  });

  test("a large result is wrapped: small fields kept, the large one digested, sizes and call id named", () => {
    const raw = { path: "/srv/list.json", content: JSON.stringify(files, null, 2) };
    const size = measure(raw);
    const wrapped = structuralDigest(raw, "call-1", size.bytes) as Record<string, unknown>;
    expect(wrapped.path).toBe("/srv/list.json");
    expect(wrapped.method).toBe("structural");
    expect(wrapped.raw_bytes).toBe(size.bytes);
    expect(wrapped.call_id).toBe("call-1");
    expect(wrapped.digest_meta).toMatchObject({ field: "content", kind: "json", elided_items: 392 });
    expect(saved(JSON.stringify(raw), JSON.stringify(wrapped))).toBeGreaterThan(0.6);
    expect(structuralDigest({ ok: true }, "c", 10)).toBeUndefined();
  });

  test("several large fields are digested under their names", () => {
    const wrapped = structuralDigest(
      { stdout: log, stderr: log.replaceAll("INFO", "NOTE"), exit_code: 1 },
      "c",
      1,
    ) as Record<string, unknown>;
    expect(wrapped.exit_code).toBe(1);
    expect(String(wrapped.digest)).toStartWith("## stdout\n");
    expect(String(wrapped.digest)).toContain("\n\n## stderr\n");
    expect(Object.keys((wrapped.digest_meta as { fields: object }).fields)).toEqual(["stdout", "stderr"]);
  });

  test("at least 60% of tokens saved on JSON and logs over 16 KiB", () => {
    const json = JSON.stringify(files, null, 2);
    expect(json.length).toBeGreaterThan(16 * 1024);
    expect(log.length).toBeGreaterThan(16 * 1024);
    expect(saved(json, reduceText(json).text)).toBeGreaterThan(0.6);
    expect(saved(log, reduceText(log).text)).toBeGreaterThan(0.6);
  });

  test("utf8Length counts bytes as UTF-8 does", () => {
    for (const text of ["abc", "é", "日本", "😀x", ""])
      expect(utf8Length(text)).toBe(new TextEncoder().encode(text).length);
  });
});

test("a field repeating another (MCP's structured echo of its text) is named, not digested twice", () => {
  const content = JSON.stringify(files);
  const wrapped = structuralDigest({ content, structured: { content } }, "c", 1) as Record<string, unknown>;
  expect(wrapped.digest_meta).toMatchObject({ field: "content", kind: "json", repeats: { structured: "content" } });
  expect(String(wrapped.digest)).not.toContain("## ");
});

test("measure counts a result's JSON text exactly as JSON.stringify writes it, without writing it", () => {
  const outputs: Record<string, unknown>[] = [
    { content: 'quote " slash \\ tab \t nl \n bell \u0007 é 日本 😀 lone \ud800 end', n: 1.5, ok: true, none: null },
    { list: [1, "a", null, { deep: ["x", { y: -2e-7 }] }], skip: undefined, empty: {}, arr: [] },
    { content: JSON.stringify(files, null, 2), structured: { content: log } },
  ];
  for (const output of outputs) {
    const text = JSON.stringify(output);
    expect(measure(output)).toEqual({
      bytes: new TextEncoder().encode(text).length,
      chars: text.length,
      tokens: estimateTokens(text),
    });
  }
});
