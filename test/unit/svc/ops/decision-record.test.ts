import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import {
  type DecisionRecord,
  digestApprover,
  jsonLine,
  redactDecision,
} from "../../../../src/svc/ops/decision-record.ts";

describe("approver redaction", () => {
  test("a person's identity becomes sha256: plus the first 16 hex characters of its digest", () => {
    const full = createHash("sha256").update("alice@example.com (asserted by sa:relay)").digest("hex");
    expect(digestApprover("alice@example.com (asserted by sa:relay)")).toBe(`sha256:${full.slice(0, 16)}`);
    expect(digestApprover("svc-inject")).toMatch(/^sha256:[0-9a-f]{16}$/);
  });

  test("machine identities (svc:internal, svc:scheduler, mast:internal, mast:scheduler) are never digested", () => {
    for (const identity of ["svc:internal", "svc:scheduler", "mast:internal", "mast:scheduler"])
      expect(digestApprover(identity)).toBe(identity);
  });

  test("--include-approver keeps the raw identity; a record without an approver stays without one", () => {
    const base: DecisionRecord = {
      decided_at: "2026-11-26T09:00:00.000Z",
      session: "incident-x",
      tool: "apply_change",
      authority: "operator_verdict",
      disposition: "authorized",
      proposed_key: "apply_change(replicas=1)",
    };
    expect(redactDecision({ ...base, approver: "alice" }, true).approver).toBe("alice");
    expect(redactDecision({ ...base, approver: "alice" }, false).approver).toMatch(/^sha256:/);
    expect(redactDecision(base, false)).not.toHaveProperty("approver");
  });
});

test("a JSON line escapes <, > and & and ends in a newline", () => {
  expect(jsonLine({ note: "<b>&</b>" })).toBe('{"note":"\\u003cb\\u003e\\u0026\\u003c/b\\u003e"}\n');
  expect(JSON.parse(jsonLine({ note: "<b>&</b>" }))).toEqual({ note: "<b>&</b>" });
});
