/**
 * docs/svc-cli.md documents every flag of the read verbs, and docs/svc-decision.schema.json is a
 * strict draft-07 schema that accepts the documented record shapes and refuses the ones the spec
 * rules out (a disposition outside the three values, an authorized record with a refusal, a grant
 * without its change set, an unknown field).
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import Ajv from "ajv";
import { EXPORT_DECISIONS_VERB } from "../../src/cli/svc-sessions/export-decisions-verb.ts";
import { LIST_VERB } from "../../src/cli/svc-sessions/list-verb.ts";
import { SHOW_VERB } from "../../src/cli/svc-sessions/show-verb.ts";

const DOCS = resolve(import.meta.dir, "..", "..", "docs");

test("docs/svc-cli.md names every flag of list, show and export-decisions", () => {
  const page = readFileSync(resolve(DOCS, "svc-cli.md"), "utf8");
  for (const verb of [LIST_VERB, SHOW_VERB, EXPORT_DECISIONS_VERB]) {
    expect(page).toContain(`spar svc ${verb.name}`);
    expect(verb.flags.map((flag) => flag.name).filter((name) => !page.includes(`--${name}`))).toEqual([]);
  }
});

describe("docs/svc-decision.schema.json", () => {
  const ajv = new Ajv({ allErrors: true, strict: true });
  ajv.addFormat("date-time", (value: string) => !Number.isNaN(Date.parse(value)));
  const validate = ajv.compile(JSON.parse(readFileSync(resolve(DOCS, "svc-decision.schema.json"), "utf8")));
  const approved = {
    decided_at: "2026-11-26T09:40:19.207Z",
    session: "incident-ap",
    tool: "apply_change",
    outcome: "approve",
    authority: "operator_verdict",
    disposition: "authorized",
    proposed_key: "apply_change(replicas=10)",
    proposed_args: { replicas: 10 },
    approver: "sha256:cc28fc3c27fd525e",
  };

  test("accepts a header and an approval", () => {
    const header = {
      _meta: {
        tool: "spar svc sessions export-decisions",
        version: "0.1.0",
        schema: "svc.decision/v1",
        exported_at: "2026-11-26T09:40:25.345Z",
        redaction: "approver_digest",
        source: "/var/lib/svc/sessions.db",
        records: 1,
        warning: "Tool arguments are exported verbatim.",
      },
    };
    expect(validate(header)).toBe(true);
    expect(validate(approved)).toBe(true);
  });

  test("refuses what the spec rules out", () => {
    expect(validate({ ...approved, disposition: "refused_by_svc", refusal: "x" })).toBe(false);
    expect(validate({ ...approved, refusal: "denied_by_operator" })).toBe(false);
    expect(validate({ ...approved, disposition: "refused_by_operator" })).toBe(false);
    expect(validate({ ...approved, authority: "change_set_grant", scope: "change_set" })).toBe(false);
    expect(validate({ ...approved, executed_key: "apply_change(replicas=3)" })).toBe(false);
    expect(validate({ ...approved, surprise: true })).toBe(false);
    const { proposed_key: _dropped, ...withoutKey } = approved;
    expect(validate(withoutKey)).toBe(false);
  });
});
