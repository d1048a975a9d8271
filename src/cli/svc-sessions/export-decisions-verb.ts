/**
 * `spar svc sessions export-decisions [<session-id>]`: the decision dataset as JSON Lines
 * (docs/svc-cli.md, its `export-decisions` section): a `_meta` header (schema `svc.decision/v1`) and one record per
 * adjudicated mutating call, oldest first, read straight from the store (read-only, no lock).
 * `--workload`, `--since` (inclusive) and `--until` (exclusive) filter; approvers are digested
 * unless `--include-approver`. Without `--out` the lines go to stdout and nothing else does; with
 * it they go to a file created 0600 and stdout says how many.
 */
import type { ParsedFlags } from "../../config/flag-parser.ts";
import type { FlagSpec } from "../../config/flag-spec.ts";
import { SPAR_VERSION } from "../../daemon/version.ts";
import {
  DECISION_SCHEMA,
  type DecisionMeta,
  type DecisionRecord,
  EXPORT_WARNING,
  incidentDecisions,
  jsonLine,
  redactDecision,
} from "../../svc/ops/decision-record.ts";
import { readIncidents } from "../../svc/ops/incident.ts";
import { writePrivateFile } from "../../fs/private-files.ts";
import type { OperatorVerb, VerbOutput } from "./operator-verb.ts";
import { verbUsageError } from "./operator-verb.ts";
import { SESSION_DB_DRIVER_FLAG, SESSION_DB_FLAG, runtimeError, stringFlag, withStore } from "./store-flags.ts";

const FLAGS: readonly FlagSpec[] = [
  SESSION_DB_FLAG,
  SESSION_DB_DRIVER_FLAG,
  { name: "workload", kind: "string", help: "only decisions of this workload" },
  { name: "since", kind: "string", help: "only decisions at or after this RFC 3339 time" },
  { name: "until", kind: "string", help: "only decisions before this RFC 3339 time" },
  {
    name: "include-approver",
    kind: "bool",
    help: "export approvers' raw identities instead of sha256 digests (the file then names people)",
  },
  { name: "out", kind: "string", help: "write the lines to this file (created 0600) instead of stdout" },
];

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

interface ExportFilter {
  session?: string;
  workload?: string;
  since?: string;
  until?: string;
}

/** The filter flags, or the usage error naming the flag at fault. */
function readFilter(flags: ParsedFlags): { ok: true; value: ExportFilter } | { ok: false; error: string } {
  const [session, extra] = flags.positionals;
  if (extra !== undefined)
    return { ok: false, error: `unexpected argument ${JSON.stringify(extra)} (at most one session id)` };
  const filter: ExportFilter = {};
  if (session !== undefined) filter.session = session;
  const workload = stringFlag(flags, "workload");
  if (workload !== undefined) filter.workload = workload;
  for (const name of ["since", "until"] as const) {
    const value = stringFlag(flags, name);
    if (value === undefined) continue;
    if (!RFC3339.test(value) || Number.isNaN(Date.parse(value)))
      return {
        ok: false,
        error: `--${name} takes an RFC 3339 time (2026-08-16T09:00:00Z), got ${JSON.stringify(value)}`,
      };
    filter[name] = value;
  }
  return { ok: true, value: filter };
}

function selected(record: DecisionRecord, filter: ExportFilter): boolean {
  const at = Date.parse(record.decided_at);
  if (filter.workload !== undefined && record.workload !== filter.workload) return false;
  if (filter.since !== undefined && at < Date.parse(filter.since)) return false;
  if (filter.until !== undefined && at >= Date.parse(filter.until)) return false;
  return true;
}

function meta(source: string, filter: ExportFilter, includeApprover: boolean, records: number): DecisionMeta {
  return {
    tool: "spar svc sessions export-decisions",
    version: SPAR_VERSION,
    schema: DECISION_SCHEMA,
    exported_at: new Date().toISOString(),
    redaction: includeApprover ? "none" : "approver_digest",
    source,
    ...filter,
    records,
    warning: EXPORT_WARNING,
  };
}

async function run(flags: ParsedFlags, output: VerbOutput): Promise<number> {
  const filter = readFilter(flags);
  if (!filter.ok) return verbUsageError(EXPORT_DECISIONS_VERB, output, filter.error);
  const out = stringFlag(flags, "out");
  if (out !== undefined && out.trim() === "")
    return verbUsageError(EXPORT_DECISIONS_VERB, output, "--out needs a file path");
  const includeApprover = flags.values.get("include-approver") === true;
  return withStore(EXPORT_DECISIONS_VERB, flags, output, async (reader) => {
    const incidents = await readIncidents(reader, filter.value.session);
    if (filter.value.session !== undefined && incidents.length === 0) {
      output.stderr(
        `spar svc sessions export-decisions: session ${JSON.stringify(filter.value.session)} (app "svc"): session not found in ${reader.source}\n`,
      );
      return 1;
    }
    const records = incidents
      .flatMap(incidentDecisions)
      .filter((record) => selected(record, filter.value))
      .sort((a, b) => Date.parse(a.decided_at) - Date.parse(b.decided_at))
      .map((record) => redactDecision(record, includeApprover));
    const text =
      jsonLine({ _meta: meta(reader.source, filter.value, includeApprover, records.length) }) +
      records.map((record) => jsonLine(record)).join("");
    if (out === undefined) {
      output.stdout(text);
      return 0;
    }
    try {
      writePrivateFile(out, text);
    } catch (error) {
      return runtimeError(EXPORT_DECISIONS_VERB, output, error);
    }
    output.stdout(
      `exported ${records.length} decision(s) to ${out} ${
        includeApprover
          ? "(raw approver identities — this file names the people who approved each change)"
          : "(approver identities digested; re-run with --include-approver for raw)"
      }\n`,
    );
    return 0;
  });
}

export const EXPORT_DECISIONS_VERB: OperatorVerb = {
  name: "sessions export-decisions",
  usage:
    "sessions export-decisions [<session-id>] --session-db=<store> [--session-db-driver=sqlite|postgres] [--workload=<w>] [--since=<RFC3339>] [--until=<RFC3339>] [--include-approver] [--out=<file>]",
  summary: `Export the write gate's decisions as JSON Lines (schema ${DECISION_SCHEMA}: a _meta header, then one record per decision, oldest first), read from the store directly. Approvers are digested unless --include-approver.`,
  flags: FLAGS,
  run: (flags, output) => run(flags, output),
};
