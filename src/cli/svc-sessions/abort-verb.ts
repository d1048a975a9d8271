/**
 * `spar svc sessions abort <id> [--reason=...] [--addr=...]`: abort the incident for good through
 * the running daemon (POST /abort): terminal for the coordinator and its specialists, the turns
 * in flight cancelled, pause tokens and timers void. Prints `/abort <id>: aborted`.
 */
import type { FlagSpec } from "../../config/flag-spec.ts";
import { ADDR_FLAG, daemonAddress, daemonCall, daemonClient } from "./daemon-client.ts";
import { type OperatorVerb, verbUsageError } from "./operator-verb.ts";
import { onePositional } from "./verb-arguments.ts";

const FLAGS: readonly FlagSpec[] = [
  { name: "reason", kind: "string", help: "why (recorded with the marker)", defaultValue: "operator abort" },
  ADDR_FLAG,
];

export const ABORT_VERB: OperatorVerb = {
  name: "sessions abort",
  usage: "sessions abort <session-id> [--reason=<text>] [--addr=<url>]",
  summary:
    "Abort a session for good: every later turn is refused, its turn in flight cancelled, its resume tokens void.",
  flags: FLAGS,
  async run(flags, output, env) {
    const sessionId = onePositional(flags, "<session-id>");
    if (!sessionId.ok) return verbUsageError(ABORT_VERB, output, sessionId.error);
    const address = daemonAddress(flags.values);
    const reason = flags.values.get("reason");
    const answer = await daemonCall(address, "/abort", () =>
      daemonClient(address, env).abort.post({
        session_id: sessionId.value,
        ...(typeof reason === "string" ? { reason } : {}),
      }),
    );
    if (!answer.ok) {
      output.stderr(`spar svc sessions abort: ${answer.message}\n`);
      return 1;
    }
    output.stdout(`/abort ${sessionId.value}: aborted\n`);
    return 0;
  },
};
