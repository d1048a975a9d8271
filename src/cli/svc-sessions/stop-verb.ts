/**
 * `spar svc stop [--addr] [--reason] [--pause-sessions]` (docs/svc-drain.md#svc-stop): asks the
 * daemon at `--addr` for a planned drain and exit (POST /stop, the SIGTERM path with the
 * interruption markers classified `operator stop[: reason]`); `--pause-sessions` gate-pauses every
 * marked session. Exit 0 once the daemon accepted (it drains on its own), 1 when it refused or
 * could not be reached, 2 on a usage error.
 */
import * as v from "valibot";
import { redactUrl } from "../../net/redact-url.ts";
import { StopAnswer } from "../../svc/listener/stop-route.ts";
import { ADDR_FLAG, DEFAULT_DAEMON_ADDRESS, daemonClient, unreachableDaemon } from "./daemon-client.ts";
import { type OperatorVerb, verbUsageError } from "./operator-verb.ts";

export const STOP_VERB: OperatorVerb = {
  name: "stop",
  usage: "stop [--addr=<url>] [--reason=<text>] [--pause-sessions]",
  summary:
    "Drain the running daemon and exit (the SIGTERM path): sessions with a turn in flight are marked interrupted, turns get the drain window. The daemon exits 0 on a clean drain, 3 if the window expires with interrupted sessions.",
  flags: [
    ADDR_FLAG,
    { name: "reason", kind: "string", help: "why: the markers read `operator stop: <reason>`", defaultText: "none" },
    {
      name: "pause-sessions",
      kind: "bool",
      help: "gate-pause every session marked interrupted (boot auto-resume leaves them to the operator)",
      defaultValue: "false",
    },
  ],
  async run(flags, output, env) {
    if (flags.positionals.length > 0)
      return verbUsageError(STOP_VERB, output, `unexpected argument ${JSON.stringify(flags.positionals[0])}`);
    const address = String(flags.values.get("addr") ?? DEFAULT_DAEMON_ADDRESS);
    const reason = flags.values.get("reason");
    const body = {
      ...(typeof reason === "string" && reason.trim() !== "" ? { reason } : {}),
      pause_sessions: flags.values.get("pause-sessions") === true,
    };
    let answer: Awaited<ReturnType<ReturnType<typeof daemonClient>["stop"]["post"]>>;
    try {
      answer = await daemonClient(address, env).stop.post(body);
    } catch (error) {
      output.stderr(`spar svc stop: ${unreachableDaemon(address, error)}\n`);
      return 1;
    }
    if (answer.error) {
      // Eden answers a connection failure as an error value carrying the system error's code.
      if (!(answer.response instanceof Response) || connectionFailure(answer.error.value)) {
        output.stderr(`spar svc stop: ${unreachableDaemon(address, describe(answer.error.value))}\n`);
        return 1;
      }
      output.stderr(
        `spar svc stop: POST ${redactUrl(address)}/stop: ${answer.status}: ${describe(answer.error.value)}\n`,
      );
      return 1;
    }
    // The route answers with a Response (json()), so the body is typed by its schema here.
    const parsed = v.safeParse(StopAnswer, answer.data as unknown);
    const bound = parsed.success ? parsed.output.drain_bound : "?";
    output.stdout(
      `stop accepted; daemon draining (bound ${bound}). Daemon exits 0 on a clean drain, 3 if the window expires with interrupted sessions.\n`,
    );
    return 0;
  },
};

function connectionFailure(value: unknown): boolean {
  return value !== null && typeof value === "object" && "code" in value && !("error" in value);
}

function describe(value: unknown): string {
  if (value !== null && typeof value === "object" && "error" in value) return String(value.error);
  if (value !== null && typeof value === "object" && "code" in value) return String(value.code);
  return typeof value === "string" ? value : JSON.stringify(value);
}
