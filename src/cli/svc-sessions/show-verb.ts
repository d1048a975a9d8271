/**
 * `spar svc sessions show <session-id>`: one incident as an operator needs it to act
 * (docs/svc-cli.md, its `show` section): its state, each pending question (interrupt id, who asked,
 * the message, its kind, the response schema, the `Stale:` line and change-set listing of
 * docs/svc.md#questions) with the command that answers it, and each operator edit that ran
 * (Proposed, Executed, Approver, Note). Read from the store directly (read-only, no lock).
 * `--output=json` gives the same data as JSON.
 */
import type { ParsedFlags } from "../../config/flag-parser.ts";
import { changeSignature } from "../../svc/gate/change-set.ts";
import type { ChangeSetQuestion } from "../../svc/gate/change-set.ts";
import {
  type Incident,
  incidentSessions,
  incidentWorkload,
  lastEventAt,
  readIncidents,
} from "../../svc/ops/incident.ts";
import {
  type EditRecord,
  type PendingQuestion,
  editRecords,
  pendingQuestions,
} from "../../svc/ops/incident-questions.ts";
import { incidentState } from "../../svc/ops/session-state.ts";
import type { OperatorVerb, VerbOutput } from "./operator-verb.ts";
import { verbUsageError } from "./operator-verb.ts";
import {
  OUTPUT_FLAG,
  SESSION_DB_DRIVER_FLAG,
  SESSION_DB_FLAG,
  choiceError,
  choiceFlag,
  withStore,
} from "./store-flags.ts";

/** `show --output=json`. */
export interface ShownSession {
  session: string;
  app: string;
  user: string;
  workload: string;
  state: string;
  notes: string[];
  last_event: string;
  events: number;
  aborted?: { reason: string; at: string; by: string };
  sessions: { app: string; events: number }[];
  pending: {
    interrupt_id: string;
    agent: string;
    raised_at: string;
    message: string;
    kind: PendingQuestion["kind"];
    tool?: string;
    stale?: string;
    change_set?: ChangeSetQuestion;
    schema: Readonly<Record<string, unknown>>;
  }[];
  edits: EditRecord[];
}

function shown(incident: Incident): ShownSession {
  const { state, notes } = incidentState(incident);
  const sessions = incidentSessions(incident);
  const abort = sessions.find((session) => session.record.abort !== undefined)?.record.abort;
  return {
    session: incident.id,
    app: incident.coordinator.record.app,
    user: incident.coordinator.record.owner,
    workload: incidentWorkload(incident),
    state,
    notes,
    last_event: lastEventAt(incident),
    events: sessions.reduce((sum, session) => sum + session.rows.length, 0),
    ...(abort === undefined ? {} : { aborted: { ...abort } }),
    sessions: sessions.map((session) => ({ app: session.record.app, events: session.rows.length })),
    pending: pendingQuestions(incident).map((question) => ({
      interrupt_id: question.interruptId,
      agent: question.agent,
      raised_at: question.raisedAt,
      message: question.message,
      kind: question.kind,
      ...(question.tool === undefined ? {} : { tool: question.tool }),
      ...(question.stale === undefined ? {} : { stale: question.stale }),
      ...(question.changeSet === undefined ? {} : { change_set: question.changeSet }),
      schema: question.schema,
    })),
    edits: editRecords(incident),
  };
}

function changeSetLines(set: ChangeSetQuestion): string[] {
  const lines = [`  Change set: ${set.changes.length} call(s) proposed by ${set.specialist}`];
  for (const [index, change] of set.changes.entries())
    lines.push(`    ${index + 1}. ${changeSignature(change.tool, change.arguments)}`);
  for (const [tool, how] of Object.entries(set.preconditions)) lines.push(`    freshness of ${tool}: ${how}`);
  lines.push(
    set.grantable
      ? `    Approve all with: --response='{"verdict":"approve","scope":"change_set"}' (valid for ${set.ttl_seconds}s)`
      : `    One at a time: ${set.ungrantable ?? "not grantable"}`,
  );
  return lines;
}

function questionLines(question: ShownSession["pending"][number]): string[] {
  const lines = [
    `  Interrupt: ${question.interrupt_id}`,
    `  Author:    ${question.agent}`,
    `  Raised:    ${question.raised_at}`,
    `  Message:   ${question.message}`,
  ];
  if (question.kind === "write-gate") lines.push(`  Kind:      write-gate park (${question.tool ?? "?"})`);
  if (question.stale !== undefined) lines.push(`  Stale:     ${question.stale}`);
  if (question.change_set !== undefined) lines.push(...changeSetLines(question.change_set));
  lines.push(`  Schema:    ${JSON.stringify(question.schema)}`);
  if (question.kind === "write-gate")
    lines.push("  Token:     none (answer it by interrupt id; mrt_ tokens resume gate pauses)");
  return lines;
}

function render(session: ShownSession): string {
  const lines = [
    `Session:    ${session.session}`,
    `App:        ${session.app}`,
    `User:       ${session.user}`,
    ...(session.workload === "" ? [] : [`Workload:   ${session.workload}`]),
    `State:      ${session.state}`,
    `Last event: ${session.last_event}`,
    `Events:     ${session.events} (${session.sessions.map((entry) => `${entry.app} ${entry.events}`).join(", ")})`,
  ];
  for (const note of session.notes) if (!note.startsWith("aborted:")) lines.push(`Why:        ${note}`);
  if (session.notes.some((note) => note.startsWith("gate pause:")))
    lines.push(
      `Resume:     spar svc sessions resume --token=<the mrt_ token pause printed> (lost it? pause ${session.session} again for a new one)`,
    );
  if (session.aborted !== undefined)
    lines.push(`Aborted:    ${session.aborted.reason} (by ${session.aborted.by} at ${session.aborted.at})`);
  for (const edit of session.edits) {
    lines.push("", "Operator edit applied:", `  Proposed: ${edit.proposed}`, `  Executed: ${edit.executed}`);
    if (edit.approver !== undefined) lines.push(`  Approver: ${edit.approver}`);
    if (edit.note !== undefined) lines.push(`  Note:     ${edit.note}`);
  }
  for (const question of session.pending) lines.push("", "Pending input:", ...questionLines(question));
  if (session.pending.length > 0) {
    lines.push("", "Resume with:");
    for (const question of session.pending)
      lines.push(
        `  spar svc sessions resume ${session.session} --interrupt=${question.interrupt_id} --response='<json>'`,
      );
  }
  return `${lines.join("\n")}\n`;
}

async function run(flags: ParsedFlags, output: VerbOutput): Promise<number> {
  const [id, extra] = flags.positionals;
  if (id === undefined)
    return verbUsageError(SHOW_VERB, output, "the session id is required (spar svc sessions show <session-id> ...)");
  if (extra !== undefined) return verbUsageError(SHOW_VERB, output, `unexpected argument ${JSON.stringify(extra)}`);
  const format = choiceFlag(flags, OUTPUT_FLAG);
  if (format === undefined) return choiceError(SHOW_VERB, output, flags, OUTPUT_FLAG);
  return withStore(SHOW_VERB, flags, output, async (reader) => {
    const incident = (await readIncidents(reader, id))[0];
    if (incident === undefined) {
      output.stderr(
        `spar svc sessions show: session ${JSON.stringify(id)} (app "svc"): session not found in ${reader.source}\n`,
      );
      return 1;
    }
    const session = shown(incident);
    output.stdout(format === "json" ? `${JSON.stringify(session)}\n` : render(session));
    return 0;
  });
}

export const SHOW_VERB: OperatorVerb = {
  name: "sessions show",
  usage: "sessions show <session-id> --session-db=<store> [--session-db-driver=sqlite|postgres] [--output=table|json]",
  summary:
    "Show one incident: its state, each pending question (interrupt id, message, response schema, change set, Stale: line) with the command that answers it, and the operator edits that ran. Read from the store directly.",
  flags: [SESSION_DB_FLAG, SESSION_DB_DRIVER_FLAG, OUTPUT_FLAG],
  run: (flags, output) => run(flags, output),
};
