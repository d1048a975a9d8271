import { expect, test } from "bun:test";
import { waitFor } from "../../support/daemon.ts";
import {
  START_RETRY_MAX_MS,
  START_RETRY_MIN_MS,
  StartRetry,
  nextStartRetryMs,
} from "../../../src/runtime/start-retry.ts";

test("a refused turn start waits 0.5 s, then doubles up to 30 s", () => {
  const waits: number[] = [];
  let previous = 0;
  for (let refusal = 0; refusal < 9; refusal++) {
    previous = nextStartRetryMs(previous);
    waits.push(previous);
  }
  expect(waits).toEqual([
    500,
    1000,
    2000,
    4000,
    8000,
    16_000,
    START_RETRY_MAX_MS,
    START_RETRY_MAX_MS,
    START_RETRY_MAX_MS,
  ]);
  expect(nextStartRetryMs(0)).toBe(START_RETRY_MIN_MS);
});

test("a retry is pending until it fires, and cancel drops it without firing", async () => {
  const retry = new StartRetry();
  let fired = 0;
  expect(retry.pending).toBe(false);
  retry.later(() => fired++);
  expect(retry.pending).toBe(true);
  await waitFor(() => (fired > 0 ? true : undefined), 5000, "the retry");
  expect(fired).toBe(1);
  expect(retry.pending).toBe(false);

  retry.succeeded();
  retry.later(() => fired++);
  retry.cancel();
  expect(retry.pending).toBe(false);
  // Time under test: past the retry's delay (START_RETRY_MIN_MS), the cancelled one never fires.
  await Bun.sleep(600);
  expect(fired).toBe(1);
});
