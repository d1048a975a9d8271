/**
 * `spar svc sessions extend-token <mrt_...> --ttl=<duration> [--addr=...]`: the token's expiry
 * becomes now + ttl (at most 168h) through the running daemon (POST /extend-token): the recovery
 * for an expired token, whose pause stayed in place. Prints `/extend-token <id>: {json}`.
 */
import type { FlagSpec } from "../../config/flag-spec.ts";
import { formatDuration } from "../../core/duration.ts";
import { ADDR_FLAG, daemonAddress, daemonCall, daemonClient } from "./daemon-client.ts";
import { type OperatorVerb, verbUsageError } from "./operator-verb.ts";
import { onePositional } from "./verb-arguments.ts";

const FLAGS: readonly FlagSpec[] = [
  { name: "ttl", kind: "duration", help: "the token's new lifetime from now (at most 168h); required" },
  ADDR_FLAG,
];

export const EXTEND_TOKEN_VERB: OperatorVerb = {
  name: "sessions extend-token",
  usage: "sessions extend-token <mrt_token> --ttl=<duration> [--addr=<url>]",
  summary: "Give a gate pause's resume token a new expiry (now + ttl); the recovery for an expired token.",
  flags: FLAGS,
  async run(flags, output, env) {
    const token = onePositional(flags, "<mrt_token>");
    if (!token.ok) return verbUsageError(EXTEND_TOKEN_VERB, output, token.error);
    const ttl = flags.values.get("ttl");
    if (typeof ttl !== "number") return verbUsageError(EXTEND_TOKEN_VERB, output, "missing --ttl (e.g. --ttl=48h)");
    if (!(ttl > 0)) return verbUsageError(EXTEND_TOKEN_VERB, output, "--ttl must be above 0");
    const address = daemonAddress(flags.values);
    const answer = await daemonCall(address, "/extend-token", () =>
      daemonClient(address, env)["extend-token"].post({ token: token.value, ttl: formatDuration(ttl) }),
    );
    if (!answer.ok) {
      output.stderr(`spar svc sessions extend-token: ${answer.message}\n`);
      return 1;
    }
    output.stdout(`/extend-token ${String(answer.body.session_id)}: ${JSON.stringify(answer.body)}\n`);
    return 0;
  },
};
