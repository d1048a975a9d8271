import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AuditRecord, openAuditLog } from "../../../../src/svc/gate/audit-log.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function logPath(): string {
  const dir = mkdtempSync(join(tmpdir(), "spar-audit-"));
  dirs.push(dir);
  return join(dir, "audit.jsonl");
}

function entry(index: number): AuditRecord {
  return {
    outcome: "apply",
    tool: "apply_change",
    call: `apply_change(${index})`,
    agent: "worker",
    session: "s",
    function_call_id: `c${index}`,
  };
}

function lines(path: string): Record<string, unknown>[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

test("the records of one tick reach the file together on the next macrotask, in order, mode 0600", async () => {
  const path = logPath();
  const log = openAuditLog(path);
  for (let index = 0; index < 3; index++) log.record(entry(index));
  expect(lines(path)).toEqual([]);
  await new Promise((resolve) => setImmediate(resolve));
  expect(lines(path).map((line) => line.function_call_id)).toEqual(["c0", "c1", "c2"]);
  expect(statSync(path).mode & 0o777).toBe(0o600);
  log.close();
});

test("close writes the records still pending; records after close are dropped", () => {
  const path = logPath();
  const log = openAuditLog(path);
  log.record(entry(1));
  log.close();
  log.record(entry(2));
  expect(lines(path).map((line) => line.function_call_id)).toEqual(["c1"]);
});
