/**
 * `spar svc sessions <verb> ...` and `spar svc stop ...`: finds the verb in OPERATOR_VERBS and
 * runs it. The verbs are the operator CLI of docs/svc-cli.md, docs/svc-pauses.md and
 * docs/svc-drain.md#svc-stop; each lives in its own module.
 */
import { closestName } from "../../config/flag-parser.ts";
import { EXPORT_DECISIONS_VERB } from "./export-decisions-verb.ts";
import { LIST_VERB } from "./list-verb.ts";
import { type OperatorVerb, type VerbOutput, runOperatorVerb } from "./operator-verb.ts";
import { ABORT_VERB } from "./abort-verb.ts";
import { ACK_EFFECTS_VERB } from "./ack-effects-verb.ts";
import { EXTEND_TOKEN_VERB } from "./extend-token-verb.ts";
import { PAUSE_VERB } from "./pause-verb.ts";
import { RESUME_VERB } from "./resume-verb.ts";
import { SHOW_VERB } from "./show-verb.ts";
import { STOP_VERB } from "./stop-verb.ts";

/** Every operator verb, by the words that name it after `spar svc`. */
export const OPERATOR_VERBS: readonly OperatorVerb[] = [
  LIST_VERB,
  SHOW_VERB,
  RESUME_VERB,
  PAUSE_VERB,
  EXTEND_TOKEN_VERB,
  ABORT_VERB,
  ACK_EFFECTS_VERB,
  EXPORT_DECISIONS_VERB,
  STOP_VERB,
];

const PROCESS_OUTPUT: VerbOutput = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/** The words after `spar svc` name an operator verb (`sessions ...` or `stop`). */
export function isOperatorCommand(argv: readonly string[]): boolean {
  return argv[0] === "sessions" || argv[0] === "stop";
}

function operatorHelp(): string {
  const lines = ["usage: spar svc sessions <verb> [flags] | spar svc stop [flags]", "", "verbs:"];
  for (const verb of OPERATOR_VERBS) lines.push(`  ${verb.usage}`, `      ${verb.summary}`);
  lines.push("", "Every verb takes --help.");
  return `${lines.join("\n")}\n`;
}

/** Run the operator verb `argv` names; exit 2 with the verbs listed when it names none. */
export async function operatorCommand(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  output: VerbOutput = PROCESS_OUTPUT,
): Promise<number> {
  const words = argv[0] === "stop" ? 1 : 2;
  const name = argv.slice(0, words).join(" ");
  const verb = OPERATOR_VERBS.find((candidate) => candidate.name === name);
  if (verb) return runOperatorVerb(verb, argv.slice(words), output, env);
  if (argv[1] === "--help" || argv[1] === "-h" || argv.length === 1) {
    output.stdout(operatorHelp());
    return argv.length === 1 ? 2 : 0;
  }
  const near = closestName(
    name,
    OPERATOR_VERBS.map((candidate) => candidate.name),
  );
  const guess = near === undefined ? "" : `did you mean \`spar svc ${near}\`? `;
  output.stderr(`spar svc: unknown verb ${JSON.stringify(name)} (${guess}see spar svc sessions --help)\n`);
  return 2;
}
