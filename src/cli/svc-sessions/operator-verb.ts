/**
 * The operator CLI's verb table: `spar svc sessions <verb>` and `spar svc stop`. Each verb is one
 * module under src/cli/svc-sessions exporting an `OperatorVerb` (its flags, help and run); this
 * file only finds the verb, parses its flags and maps a usage error to exit 2 naming the flag.
 */
import { parseFlags, renderHelp } from "../../config/flag-parser.ts";
import type { ParsedFlags } from "../../config/flag-parser.ts";
import type { FlagSpec } from "../../config/flag-spec.ts";

/** What a verb writes to; tests pass their own. */
export interface VerbOutput {
  stdout(text: string): void;
  stderr(text: string): void;
}

export interface OperatorVerb {
  /** `sessions list`, `stop`, ... as typed after `spar svc`. */
  name: string;
  /** The usage line after `spar svc `. */
  usage: string;
  summary: string;
  flags: readonly FlagSpec[];
  /** The exit code (0 ok, 1 error, 2 usage). */
  run(flags: ParsedFlags, output: VerbOutput, env: NodeJS.ProcessEnv): Promise<number>;
}

/** A usage error inside a verb's run: the message on stderr, exit 2. */
export function verbUsageError(verb: OperatorVerb, output: VerbOutput, message: string): number {
  output.stderr(`spar svc ${verb.name}: ${message}\n`);
  return 2;
}

/** Run `verb` on its argv: `--help` prints its help; a bad flag is exit 2 naming it. */
export async function runOperatorVerb(
  verb: OperatorVerb,
  argv: readonly string[],
  output: VerbOutput,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const parsed = parseFlags(verb.flags, argv);
  if (!parsed.ok) return verbUsageError(verb, output, parsed.error);
  if (parsed.value.help) {
    output.stdout(renderHelp(`spar svc ${verb.usage}`, verb.summary, verb.flags));
    return 0;
  }
  return verb.run(parsed.value, output, env);
}
