/**
 * `spar svc sessions pause <id> --reason=<enum> [--message] [--resume-at=RFC3339 |
 * --resume-after=15m] [--interrupt] [--ttl=48h] [--addr]`: gate-pause an incident through the
 * running daemon (POST /pause). Every later turn kind is refused until it is resumed with the
 * printed token (or by the timer). `--resume-after` becomes an RFC 3339 `resume_at` here, on the
 * client (docs/svc-pauses.md#gate-pause). Prints `/pause <id>: {"token":"mrt_...",...}` and the
 * resume command.
 */
import type { FlagSpec } from "../../config/flag-spec.ts";
import { formatDuration } from "../../core/duration.ts";
import { PAUSE_REASONS, type PauseReason } from "../../svc/pause/resume-token.ts";
import { ADDR_FLAG, daemonAddress, daemonCall, daemonClient } from "./daemon-client.ts";
import { type OperatorVerb, verbUsageError } from "./operator-verb.ts";
import { exclusive, onePositional, requiredString } from "./verb-arguments.ts";

const FLAGS: readonly FlagSpec[] = [
  { name: "reason", kind: "string", help: "why; required", choices: PAUSE_REASONS },
  { name: "message", kind: "string", help: "a note shown with the pause" },
  { name: "resume-at", kind: "string", help: "resume by itself at this RFC 3339 time" },
  { name: "resume-after", kind: "duration", help: "resume by itself after this long (e.g. 15m)" },
  { name: "interrupt", kind: "bool", help: "also cancel the turn in flight (otherwise it finishes)" },
  { name: "ttl", kind: "duration", help: "the token's lifetime; only shortens", defaultValue: "168h" },
  ADDR_FLAG,
];

export const PAUSE_VERB: OperatorVerb = {
  name: "sessions pause",
  usage:
    "sessions pause <session-id> --reason=<reason> [--message=<text>] [--resume-at=<RFC3339> | --resume-after=<duration>] [--interrupt] [--ttl=<duration>] [--addr=<url>]",
  summary: "Gate-pause a session: every later turn is refused until it is resumed with the printed mrt_ token.",
  flags: FLAGS,
  async run(flags, output, env) {
    const usage = (message: string) => verbUsageError(PAUSE_VERB, output, message);
    const sessionId = onePositional(flags, "<session-id>");
    if (!sessionId.ok) return usage(sessionId.error);
    const reason = requiredString(flags, "reason", `one of ${PAUSE_REASONS.join(", ")}`);
    if (!reason.ok) return usage(reason.error);
    if (!(PAUSE_REASONS as readonly string[]).includes(reason.value))
      return usage(`--reason must be one of ${PAUSE_REASONS.join(", ")}, got ${JSON.stringify(reason.value)}`);
    const timed = exclusive(flags, ["resume-at", "resume-after"]);
    if (!timed.ok) return usage(timed.error);
    const resumeAt = resumeTime(flags.values.get("resume-at"), flags.values.get("resume-after"));
    if (!resumeAt.ok) return usage(resumeAt.error);
    const ttl = flags.values.get("ttl");
    if (typeof ttl === "number" && !(ttl > 0)) return usage("--ttl must be above 0");
    const message = flags.values.get("message");
    const address = daemonAddress(flags.values);
    const answer = await daemonCall(address, "/pause", () =>
      daemonClient(address, env).pause.post({
        session_id: sessionId.value,
        reason: reason.value as PauseReason,
        ...(typeof message === "string" ? { message } : {}),
        ...(resumeAt.value === undefined ? {} : { resume_at: resumeAt.value }),
        ...(flags.values.get("interrupt") === true ? { interrupt: true } : {}),
        ...(typeof ttl === "number" ? { ttl: formatDuration(ttl) } : {}),
      }),
    );
    if (!answer.ok) {
      output.stderr(`spar svc sessions pause: ${answer.message}\n`);
      return 1;
    }
    output.stdout(`/pause ${sessionId.value}: ${JSON.stringify(answer.body)}\n`);
    output.stdout(`Resume with:\n  spar svc sessions resume --token=${String(answer.body.token)}\n`);
    return 0;
  },
};

function resumeTime(
  at: unknown,
  after: unknown,
): { ok: true; value: string | undefined } | { ok: false; error: string } {
  if (typeof after === "number") return { ok: true, value: new Date(Date.now() + after).toISOString() };
  if (typeof at !== "string") return { ok: true, value: undefined };
  const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
  if (!rfc3339.test(at) || Number.isNaN(Date.parse(at)))
    return {
      ok: false,
      error: `--resume-at takes an RFC 3339 time such as 2026-08-16T09:05:00Z, got ${JSON.stringify(at)}`,
    };
  return { ok: true, value: at };
}
