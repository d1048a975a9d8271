/**
 * `spar svc sessions list`: every incident of the store with its owner, last activity, state and
 * what it waits on (docs/svc-cli.md#incidents-and-their-state), newest first, read straight from the store (read-only, no
 * lock), so it works with no daemon running and beside one. `--user` and `--state` filter;
 * `--output=json` gives the same rows as JSON.
 */
import type { ParsedFlags } from "../../config/flag-parser.ts";
import type { FlagSpec } from "../../config/flag-spec.ts";
import {
  type Incident,
  incidentWorkload,
  isEmptyIncident,
  lastEventAt,
  readIncidents,
} from "../../svc/ops/incident.ts";
import { pendingQuestions } from "../../svc/ops/incident-questions.ts";
import { OPERATOR_STATES, incidentState } from "../../svc/ops/session-state.ts";
import type { OperatorVerb, VerbOutput } from "./operator-verb.ts";
import { verbUsageError } from "./operator-verb.ts";
import {
  OUTPUT_FLAG,
  SESSION_DB_DRIVER_FLAG,
  SESSION_DB_FLAG,
  choiceError,
  choiceFlag,
  stringFlag,
  textTable,
  withStore,
} from "./store-flags.ts";

const STATE_FLAG: FlagSpec = {
  name: "state",
  kind: "string",
  help: "only incidents in this state",
  choices: OPERATOR_STATES,
};

const USER_FLAG: FlagSpec = { name: "user", kind: "string", help: "only incidents this identity owns" };

/** One incident as `list` shows it (the JSON output's element). */
export interface ListedSession {
  session: string;
  user: string;
  app: string;
  workload: string;
  last_event: string;
  state: string;
  /** Interrupt ids of the questions it waits on, oldest first. */
  pending: string[];
  /** What the state readers noted (`aborted: <reason>`). */
  notes: string[];
}

function listed(incident: Incident): ListedSession {
  const { state, notes } = incidentState(incident);
  const last = lastEventAt(incident);
  return {
    session: incident.id,
    user: incident.coordinator.record.owner,
    app: incident.coordinator.record.app,
    workload: incidentWorkload(incident),
    last_event: last === "" ? "" : `${new Date(last).toISOString().slice(0, 19)}Z`,
    state,
    pending: pendingQuestions(incident).map((question) => question.interruptId),
    notes,
  };
}

function pendingCell(session: ListedSession): string {
  const parts = session.pending.length > 0 ? [session.pending.join(",")] : [];
  return [...parts, ...session.notes.map((note) => `(${note})`)].join(" ");
}

function render(sessions: readonly ListedSession[]): string {
  const header = ["SESSION", "USER", "APP", "LAST EVENT", "STATE", "PENDING"];
  const rows = sessions.map((s) => [s.session, s.user, s.app, s.last_event, s.state, pendingCell(s)]);
  return textTable([header, ...rows]) + (sessions.length === 0 ? "(no sessions)\n" : "");
}

async function run(flags: ParsedFlags, output: VerbOutput): Promise<number> {
  if (flags.positionals.length > 0)
    return verbUsageError(LIST_VERB, output, `unexpected argument ${JSON.stringify(flags.positionals[0])}`);
  const format = choiceFlag(flags, OUTPUT_FLAG);
  if (format === undefined) return choiceError(LIST_VERB, output, flags, OUTPUT_FLAG);
  const state = stringFlag(flags, STATE_FLAG.name);
  if (state !== undefined && !OPERATOR_STATES.some((name) => name === state))
    return choiceError(LIST_VERB, output, flags, STATE_FLAG);
  const user = stringFlag(flags, USER_FLAG.name);
  return withStore(LIST_VERB, flags, output, async (reader) => {
    const sessions = (await readIncidents(reader))
      .filter((incident) => !isEmptyIncident(incident))
      .map(listed)
      .filter(
        (session) => (user === undefined || session.user === user) && (state === undefined || session.state === state),
      )
      .sort((a, b) =>
        a.last_event === b.last_event ? (a.session < b.session ? -1 : 1) : a.last_event < b.last_event ? 1 : -1,
      );
    output.stdout(format === "json" ? `${JSON.stringify({ sessions })}\n` : render(sessions));
    return 0;
  });
}

export const LIST_VERB: OperatorVerb = {
  name: "sessions list",
  usage:
    "sessions list --session-db=<store> [--session-db-driver=sqlite|postgres] [--user=<u>] [--state=paused|aborted|interrupted|idle] [--output=table|json]",
  summary:
    "List the store's incidents (newest first) with their state and pending questions, read from the store directly: no daemon needed, none disturbed.",
  flags: [SESSION_DB_FLAG, SESSION_DB_DRIVER_FLAG, USER_FLAG, STATE_FLAG, OUTPUT_FLAG],
  run: (flags, output) => run(flags, output),
};
