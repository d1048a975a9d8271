/**
 * `spar svc sessions ack-effects <id> [--reason=...] [--addr=... | --session-db=...]`: acknowledge
 * the calls of an incident whose effect is unknown (cut while they ran), so its mutating calls are
 * no longer refused `ambiguous_prior_effect`. The acknowledgement covers only the calls persisted
 * up to that moment. Through the daemon (POST /ack-effects) by default; `--session-db` writes a
 * store no daemon holds directly, after a warning.
 */
import type { FlagSpec } from "../../config/flag-spec.ts";
import { ADDR_FLAG, daemonAddress, daemonCall, daemonClient } from "./daemon-client.ts";
import { type OperatorVerb, verbUsageError } from "./operator-verb.ts";
import { ackEffectsDirect, directWriteWarning } from "./store-direct.ts";
import { exclusive, onePositional } from "./verb-arguments.ts";

export const SESSION_DB_FLAG: FlagSpec = {
  name: "session-db",
  kind: "string",
  help: "write this sqlite store directly instead of going through a daemon (only a store no daemon serves)",
};

const FLAGS: readonly FlagSpec[] = [
  { name: "reason", kind: "string", help: "why (recorded with the acknowledgement)", defaultValue: "operator ack" },
  ADDR_FLAG,
  SESSION_DB_FLAG,
];

export const ACK_EFFECTS_VERB: OperatorVerb = {
  name: "sessions ack-effects",
  usage: "sessions ack-effects <session-id> [--reason=<text>] [--addr=<url> | --session-db=<path>]",
  summary:
    "Acknowledge the calls cut while they ran (unknown effect), so mutating calls run again; covers calls persisted so far.",
  flags: FLAGS,
  async run(flags, output, env) {
    const sessionId = onePositional(flags, "<session-id>");
    if (!sessionId.ok) return verbUsageError(ACK_EFFECTS_VERB, output, sessionId.error);
    const either = exclusive(flags, ["addr", "session-db"]);
    if (!either.ok) return verbUsageError(ACK_EFFECTS_VERB, output, either.error);
    const reason = flags.values.get("reason");
    const sessionDb = flags.values.get("session-db");
    if (typeof sessionDb === "string") {
      output.stderr(directWriteWarning(sessionDb));
      try {
        const count = await ackEffectsDirect(
          sessionDb,
          sessionId.value,
          typeof reason === "string" ? reason : "operator ack",
        );
        output.stdout(`acknowledged (${count} call${count === 1 ? "" : "s"})\n`);
        return 0;
      } catch (error) {
        output.stderr(`spar svc sessions ack-effects: ${error instanceof Error ? error.message : String(error)}\n`);
        return 1;
      }
    }
    const address = daemonAddress(flags.values);
    const answer = await daemonCall(address, "/ack-effects", () =>
      daemonClient(address, env)["ack-effects"].post({
        session_id: sessionId.value,
        ...(typeof reason === "string" ? { reason } : {}),
      }),
    );
    if (!answer.ok) {
      output.stderr(`spar svc sessions ack-effects: ${answer.message}\n`);
      return 1;
    }
    const count = Number(answer.body.acknowledged ?? 0);
    output.stdout(`/ack-effects ${sessionId.value}: acknowledged (${count} call${count === 1 ? "" : "s"})\n`);
    return 0;
  },
};
