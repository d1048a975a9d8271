import { expect, test } from "bun:test";
import { SparError } from "../../../src/core/errors.ts";
import { InboxRoom } from "../../../src/core/inbox-room.ts";

function refused(run: () => unknown): SparError {
  try {
    run();
  } catch (error) {
    if (error instanceof SparError) return error;
    throw error;
  }
  throw new Error("not refused");
}

test("messages waiting plus those being committed count against the message cap", () => {
  const room = new InboxRoom({ maxMessages: 3, maxBytes: 1000 });
  const waiting = [{ message: "a" }];
  const release = room.reserve(waiting, "b");
  room.reserve(waiting, "c");
  const error = refused(() => room.reserve(waiting, "d"));
  expect(error.code).toBe("too_many_requests");
  expect(error.message).toContain("maximum of 3 messages");
  expect(error.details).toEqual({ retry_after_seconds: 5 });
  release();
  release();
  expect(() => room.reserve(waiting, "d")).not.toThrow();
});

test("UTF-8 bytes count against the byte cap; a drained list frees them", () => {
  const room = new InboxRoom({ maxMessages: 100, maxBytes: 10 });
  const waiting = [{ message: "ééé" }];
  expect(refused(() => room.reserve(waiting, "12345")).message).toContain(
    "maximum of 10 bytes waiting for a turn (6 held, 5 more)",
  );
  const release = room.reserve(waiting, "1234");
  release();
  waiting.splice(0);
  expect(() => room.reserve(waiting, "1234567890")).not.toThrow();
});
