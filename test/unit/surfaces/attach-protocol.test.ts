import { expect, test } from "bun:test";
import { PROTOCOL_VERSION, negotiateProtocol } from "../../../src/surfaces/attach/attach-protocol.ts";

test("only the major is enforced; nothing declared is accepted", () => {
  expect(PROTOCOL_VERSION).toBe("1.16.0");
  // The major ends at the first '.', '-' or '+'; what follows is not checked.
  for (const version of [undefined, "1", "1.0.0", "v1.99.3", "1-beta", "1+build", "1.x", "1..0"])
    expect(negotiateProtocol(version)).toEqual({ accepted: true });
  expect(negotiateProtocol("2.0.0")).toMatchObject({ accepted: false, reason: "incompatible" });
  expect(negotiateProtocol("v0.9")).toMatchObject({ accepted: false, reason: "incompatible" });
  for (const bad of ["", "banana", "-1", "v", "x1", ".1"])
    expect(negotiateProtocol(bad)).toMatchObject({ accepted: false, reason: "malformed" });
});
