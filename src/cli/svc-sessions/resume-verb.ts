/**
 * `spar svc sessions resume`, both forms (docs/svc-pauses.md#resume-with-the-token,
 * docs/svc-pauses.md#answer-a-question):
 * - `resume <id> --interrupt=<iid> --response=<json> [--ack-effects] [--addr]`: answer a question
 *   (an approval verdict or any other interrupt) through the daemon's POST /resume;
 * - `resume --token=<mrt_> [--response] [--ack-effects] [--addr | --session-db]`: resume a gate
 *   pause with its token. Through the daemon by default; `--session-db` consumes the token in a
 *   store no daemon holds directly (gate pauses only, after a warning).
 * `--ack-effects` acknowledges the incident's ambiguous calls first.
 */
import type { FlagSpec } from "../../config/flag-spec.ts";
import { ADDR_FLAG, daemonAddress, daemonCall, daemonClient } from "./daemon-client.ts";
import { SESSION_DB_FLAG } from "./ack-effects-verb.ts";
import { type OperatorVerb, type VerbOutput, verbUsageError } from "./operator-verb.ts";
import { ackEffectsDirect, directWriteWarning, resumeTokenDirect } from "./store-direct.ts";
import { exclusive, jsonFlag, noPositional, onePositional, requiredString } from "./verb-arguments.ts";
import type { ParsedFlags } from "../../config/flag-parser.ts";

const FLAGS: readonly FlagSpec[] = [
  { name: "interrupt", kind: "string", help: "the interrupt id of the question to answer (with <session-id>)" },
  { name: "response", kind: "string", help: 'the answer as JSON, e.g. \'{"verdict":"approve"}\'' },
  { name: "token", kind: "string", help: "a gate pause's mrt_ resume token (instead of <session-id> and --interrupt)" },
  { name: "ack-effects", kind: "bool", help: "first acknowledge the calls cut while they ran (unknown effect)" },
  ADDR_FLAG,
  {
    ...SESSION_DB_FLAG,
    help: "with --token: consume it in this sqlite store directly (only a store no daemon serves)",
  },
];

export const RESUME_VERB: OperatorVerb = {
  name: "sessions resume",
  usage:
    "sessions resume <session-id> --interrupt=<iid> --response=<json> [--ack-effects] [--addr=<url>] | sessions resume --token=<mrt_token> [--response=<json>] [--ack-effects] [--addr=<url> | --session-db=<path>]",
  summary:
    "Answer a pending question, or resume a gate pause with its token (consumed once; a replay changes nothing).",
  flags: FLAGS,
  async run(flags, output, env) {
    const usage = (message: string) => verbUsageError(RESUME_VERB, output, message);
    const response = jsonFlag(flags, "response");
    if (!response.ok) return usage(response.error);
    const either = exclusive(flags, ["addr", "session-db"]);
    if (!either.ok) return usage(either.error);
    if (flags.values.has("token")) return resumeByToken(flags, response.value, output, env);
    const sessionId = onePositional(flags, "<session-id> (or --token=<mrt_token>)");
    if (!sessionId.ok) return usage(sessionId.error);
    if (flags.values.has("session-db")) return usage("--session-db works only with --token (gate pauses)");
    const interruptId = requiredString(flags, "interrupt", "the interrupt id `sessions show` prints");
    if (!interruptId.ok) return usage(interruptId.error);
    if (response.value === undefined) return usage("missing --response (the answer as JSON)");
    const address = daemonAddress(flags.values);
    const answer = await daemonCall(address, "/resume", () =>
      daemonClient(address, env).resume.post({
        session_id: sessionId.value,
        interrupt_id: interruptId.value,
        response: response.value,
        ...(flags.values.get("ack-effects") === true ? { ack_effects: true } : {}),
      }),
    );
    if (!answer.ok) {
      output.stderr(`spar svc sessions resume: ${answer.message}\n`);
      return 1;
    }
    const { outcome, state } = answer.body;
    output.stdout(`/resume ${sessionId.value}: resumed (${String(outcome)}; session ${String(state)})\n`);
    return 0;
  },
};

async function resumeByToken(
  flags: ParsedFlags,
  response: unknown,
  output: VerbOutput,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const usage = (message: string) => verbUsageError(RESUME_VERB, output, message);
  const none = noPositional(flags);
  if (!none.ok) return usage(`${none.error}: --token names the session`);
  if (flags.values.has("interrupt")) return usage("--token and --interrupt exclude each other");
  const token = requiredString(flags, "token", "the mrt_ token the pause printed");
  if (!token.ok) return usage(token.error);
  const ackEffects = flags.values.get("ack-effects") === true;
  const sessionDb = flags.values.get("session-db");
  if (typeof sessionDb === "string") {
    if (response !== undefined)
      return usage("--response needs a daemon (--addr): --session-db clears gate pauses only");
    return resumeInStore(sessionDb, token.value, ackEffects, output);
  }
  const address = daemonAddress(flags.values);
  const answer = await daemonCall(address, "/resume", () =>
    daemonClient(address, env).resume.post({
      token: token.value,
      ...(response === undefined ? {} : { response }),
      ...(ackEffects ? { ack_effects: true } : {}),
    }),
  );
  if (!answer.ok) {
    output.stderr(`spar svc sessions resume: ${answer.message}\n`);
    return 1;
  }
  const sessionId = String(answer.body.session_id);
  const what = answer.body.replay === true ? "already resumed (the token was used before; nothing changed)" : "resumed";
  output.stdout(`/resume ${sessionId}: ${what}\n`);
  return 0;
}

async function resumeInStore(path: string, token: string, ackEffects: boolean, output: VerbOutput): Promise<number> {
  output.stderr(directWriteWarning(path));
  try {
    const resumed = await resumeTokenDirect(path, token);
    if (ackEffects && !resumed.already)
      await ackEffectsDirect(path, resumed.sessionId, "operator ack (resume --ack-effects)");
    output.stdout(`gate pause on ${resumed.sessionId} ${resumed.already ? "already resumed" : "resumed"}\n`);
    return 0;
  } catch (error) {
    output.stderr(`spar svc sessions resume: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
