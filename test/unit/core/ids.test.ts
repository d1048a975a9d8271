import { expect, test } from "bun:test";
import { uuidv7 } from "../../../src/core/ids.ts";

test("uuidv7: version 7, RFC variant, the millisecond time first, and no repeats across many pool refills", () => {
  const at = Date.UTC(2026, 10, 26, 10, 0, 0);
  const seen = new Set<string>();
  for (let i = 0; i < 5_000; i++) {
    const id = uuidv7(at);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    seen.add(id);
  }
  expect(seen.size).toBe(5_000);
  const first = [...seen][0] ?? "";
  expect(Number.parseInt(first.replace("-", "").slice(0, 12), 16)).toBe(at);
});
