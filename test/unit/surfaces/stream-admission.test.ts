import { describe, expect, test } from "bun:test";
import { SparError } from "../../../src/core/errors.ts";
import { StreamAdmission, defaultStreamCaps } from "../../../src/surfaces/http/stream-admission.ts";
import type { Caller } from "../../../src/surfaces/http/caller-auth.ts";

const alice: Caller = { identity: "alice", admin: false, source: "bearer" };
const bob: Caller = { identity: "bob", admin: false, source: "bearer" };
const root: Caller = { identity: "root", admin: true, source: "bearer" };

function refusal(run: () => unknown): SparError {
  try {
    run();
  } catch (error) {
    if (error instanceof SparError) return error;
    throw error;
  }
  throw new Error("not refused");
}

describe("StreamAdmission", () => {
  test("per-caller and global caps, the admin reserve, release freeing exactly one slot", () => {
    const refused: string[] = [];
    const admission = new StreamAdmission({ maxStreams: 3, maxPerCaller: 2, adminReserve: 1 }, (reason) =>
      refused.push(reason),
    );
    const first = admission.admit(alice);
    admission.admit(alice);
    const perCaller = refusal(() => admission.admit(alice));
    expect(perCaller.code).toBe("too_many_requests");
    expect(perCaller.details).toEqual({ retry_after_seconds: 5 });
    admission.admit(bob);
    expect(refusal(() => admission.admit(bob)).message).toContain("maximum of 3");
    const adminStream = admission.admit(root);
    expect(refusal(() => admission.admit(root)).message).toContain("maximum of 3");
    expect(admission.open).toBe(4);
    expect(admission.callers).toBe(3);
    first();
    first();
    expect(admission.open).toBe(3);
    adminStream();
    expect(admission.callers).toBe(2);
    expect(() => admission.admit(bob)).not.toThrow();
    expect(refused).toEqual(["caller_cap", "global_cap", "global_cap"]);
  });

  test("admins are exempt from the per-caller cap", () => {
    const admission = new StreamAdmission({ maxStreams: 10, maxPerCaller: 1, adminReserve: 0 });
    for (let index = 0; index < 5; index++) admission.admit(root);
    expect(admission.open).toBe(5);
  });
});

describe("defaultStreamCaps", () => {
  test("keeps a tenth of the open-file limit (at least 512) for everything else", () => {
    expect(defaultStreamCaps(20_000).maxStreams).toBe(18_000);
    expect(defaultStreamCaps(1024).maxStreams).toBe(512);
    expect(defaultStreamCaps(256).maxStreams).toBe(64);
    expect(defaultStreamCaps(undefined).maxStreams).toBe(4096);
    expect(defaultStreamCaps(20_000).maxPerCaller).toBe(256);
  });
});
