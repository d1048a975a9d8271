/**
 * SessionFeed's replay pacing: pages sized by bytes, so a subscriber waiting for room holds about
 * 1 MiB of rows whatever their size; small rows still replay in pages of 500.
 */
import { expect, test } from "bun:test";
import { nextPageSize } from "../../../src/runtime/session-feed.ts";

test("replay pages hold about 1 MiB: 500 small rows, a few large ones, never fewer than 4", () => {
  expect(nextPageSize(16, 16 * 300)).toBe(500);
  expect(nextPageSize(16, 16 * 14_000)).toBe(74);
  expect(nextPageSize(16, 16 * 110_000)).toBe(9);
  expect(nextPageSize(4, 4 * 5_000_000)).toBe(4);
  expect(nextPageSize(0, 0)).toBe(500);
});
