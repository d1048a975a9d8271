/**
 * The scripted-model recordings under docs/examples/ (the README's tour, the config example) parse
 * with the daemon's own script parser, and the tour's script proposes the `bash` call the README
 * tells the reader to approve.
 */
import { expect, test } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseScript } from "../../src/models/script-file.ts";

const EXAMPLES = resolve(import.meta.dir, "..", "..", "docs", "examples");

test("every docs/examples/*.jsonl parses as a scripted-model recording", () => {
  const files = readdirSync(EXAMPLES).filter((name) => name.endsWith(".jsonl"));
  expect(files).toContain("tour.jsonl");
  for (const name of files) {
    const parsed = parseScript(name, readFileSync(join(EXAMPLES, name), "utf8"));
    if (!parsed.ok) throw new Error(parsed.error);
    expect(parsed.value.length).toBeGreaterThan(0);
  }
});

test("the README's tour script asks to run `echo hello from bash`, then answers in text", () => {
  const parsed = parseScript("tour.jsonl", readFileSync(join(EXAMPLES, "tour.jsonl"), "utf8"));
  if (!parsed.ok) throw new Error(parsed.error);
  const [call, answer] = parsed.value;
  expect(JSON.stringify(call)).toContain('"functionCall":{"name":"bash","args":{"command":"echo hello from bash"}}');
  expect(JSON.stringify(answer)).toContain("hello from bash");
  const readme = readFileSync(resolve(import.meta.dir, "..", "..", "README.md"), "utf8");
  expect(readme).toContain("--script=docs/examples/tour.jsonl");
  expect(readme).toContain('"detail":"echo hello from bash"');
});
