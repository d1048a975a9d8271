/**
 * The `call_a2a` tool (D?): the model sends a text message to a remote A2A agent it names (never
 * a URL) and reads the answer. `RemoteAgentTools` puts it in front of another runner and catalog
 * (as the skill tools do): offered and listed (`source: "other"`) only while at least one remote
 * agent is known, classed `mutating` for the permission gate (the remote agent may act). It runs on
 * the main thread: an async fetch through the outbound guard, no child process.
 *
 * A call: the agent's deadline (`timeout_seconds` of its declaration, 60 s by default) and the
 * turn's cancel bound it; the bearer is read from the variable its `auth.token_env` names at each
 * call (an unset variable is an error naming the variable, never a call without it); `completed`
 * answers the text, `input-required` / `auth-required` answer the question with the task id to
 * answer it under, `failed` / `rejected` / `canceled` and every transport or protocol error are
 * error results. The bearer's value is replaced by `[redacted]` anywhere in a result, so a remote
 * agent echoing it cannot hand it to the model.
 */
import * as v from "valibot";
import type { ToolSpec } from "../core/model.ts";
import type { ToolCatalog, ToolRunResult, ToolRunner } from "../core/tool-catalog.ts";
import { capText } from "../tools/builtin-tool.ts";
import { toolInputSchema } from "../tools/tool-input-schema.ts";
import { ToolsInFront } from "../tools/tools-in-front.ts";
import type { A2aClient, A2aOutcome, A2aTarget } from "./a2a-client.ts";
import type { RemoteAgentDirectory, RemoteAgentEntry } from "./remote-agent-directory.ts";

export const CALL_A2A = "call_a2a";

/** The answer text kept for the model; the rest is cut (`truncated: true`). */
export const MAX_ANSWER_BYTES = 256 * 1024;

const CallInput = v.object({
  agent: v.pipe(
    v.string("agent must be a string"),
    v.minLength(1, "agent must not be empty"),
    v.description("The remote agent's name, as listed in this tool's description."),
  ),
  message: v.pipe(
    v.string("message must be a string"),
    v.minLength(1, "message must not be empty"),
    v.maxLength(64 * 1024, "message must be at most 65536 characters"),
    v.description("What to ask or tell the remote agent, with the context it needs."),
  ),
  context_id: v.optional(
    v.pipe(
      v.string(),
      v.maxLength(256),
      v.description("Continue an earlier conversation: the context_id a previous answer gave."),
    ),
  ),
  task_id: v.optional(
    v.pipe(
      v.string(),
      v.maxLength(256),
      v.description("Answer a task that asked for input: the task_id of that answer (your message is the answer)."),
    ),
  ),
});

const INPUT_SCHEMA = toolInputSchema(CallInput);

type CallArgs = v.InferOutput<typeof CallInput>;

const failure = (output: Record<string, unknown>): ToolRunResult => ({ output, isError: true });

/** The tool's spec for the agents known now. */
export function callA2aSpec(agents: readonly RemoteAgentEntry[]): ToolSpec {
  const listed = agents.map((agent) => `${agent.name} (${agent.description})`).join("; ");
  return {
    name: CALL_A2A,
    description: `Send a message to a remote agent over A2A and return its answer. Agents: ${listed}. An answer with state input-required asks you something: call again with its task_id and your answer.`,
    inputSchema: INPUT_SCHEMA,
  };
}

/** Every string in `value` with `secret` replaced by `[redacted]`. */
function scrub(value: Record<string, unknown>, secret: string | undefined): Record<string, unknown> {
  if (secret === undefined || secret === "") return value;
  return JSON.parse(
    JSON.stringify(value, (_key, item) => (typeof item === "string" ? item.split(secret).join("[redacted]") : item)),
  );
}

/** Runs `call_a2a` calls against the directory's agents. */
export class RemoteAgentCaller {
  readonly #directory: RemoteAgentDirectory;
  readonly #clientFor: (agent: RemoteAgentEntry) => A2aClient;
  readonly #env: Readonly<Record<string, string | undefined>>;

  /** `clientFor` gives the client an agent is called with (its outbound guard). */
  constructor(
    directory: RemoteAgentDirectory,
    clientFor: (agent: RemoteAgentEntry) => A2aClient,
    env: Readonly<Record<string, string | undefined>> = process.env,
  ) {
    this.#directory = directory;
    this.#clientFor = clientFor;
    this.#env = env;
  }

  /** The tool's ToolSpec, or undefined while no agent is known. */
  spec(): ToolSpec | undefined {
    const agents = this.#directory.entries();
    return agents.length === 0 ? undefined : callA2aSpec(agents);
  }

  offered(): boolean {
    return this.#directory.entries().length > 0;
  }

  async run(args: unknown, cancel: AbortSignal): Promise<ToolRunResult> {
    const parsed = v.safeParse(CallInput, args);
    if (!parsed.success) {
      const issue = parsed.issues[0];
      return failure({
        error: `invalid input for ${CALL_A2A}: ${issue ? `${v.getDotPath(issue) ?? "input"}: ${issue.message}` : "invalid"}`,
      });
    }
    const input = parsed.output;
    const agents = this.#directory.entries();
    const agent = agents.find((entry) => entry.name === input.agent);
    if (agent === undefined)
      return failure({
        error: `no remote agent ${JSON.stringify(input.agent)} (known: ${agents.map((entry) => entry.name).join(", ") || "none"})`,
      });
    const target = this.#target(agent);
    if (typeof target === "string") return failure({ agent: agent.name, error: target });
    const result = await this.#call(agent, target, input, cancel);
    return { ...result, output: scrub(result.output, target.bearer) };
  }

  /** Where to send, with the bearer read now; a string says why the call cannot be made. */
  #target(agent: RemoteAgentEntry): A2aTarget | string {
    const target: A2aTarget = {
      ...(agent.endpoint === undefined ? {} : { endpoint: agent.endpoint }),
      ...(agent.cardUrl === undefined ? {} : { cardUrl: agent.cardUrl }),
    };
    if (agent.auth === undefined) return target;
    if (agent.auth.type.toLowerCase() !== "bearer")
      return `auth.type ${JSON.stringify(agent.auth.type)} of ${agent.source} is not supported (bearer only)`;
    const name = agent.auth.tokenEnv;
    if (name === undefined)
      return `auth.type bearer of ${agent.source} needs auth.token_env, the variable holding the token`;
    const value = this.#env[name];
    if (value === undefined || value === "")
      return `the variable ${name} (auth.token_env of ${agent.source}) is not set: the call was not made`;
    return { ...target, bearer: value };
  }

  async #call(
    agent: RemoteAgentEntry,
    target: A2aTarget,
    input: CallArgs,
    cancel: AbortSignal,
  ): Promise<ToolRunResult> {
    const progress: { taskId?: string; contextId?: string } = {};
    const signal = AbortSignal.any([cancel, AbortSignal.timeout(agent.timeoutMs)]);
    let outcome: A2aOutcome;
    try {
      outcome = await this.#clientFor(agent).send(target, {
        text: input.message,
        ...(input.context_id === undefined ? {} : { contextId: input.context_id }),
        ...(input.task_id === undefined ? {} : { taskId: input.task_id }),
        signal,
        progress,
      });
    } catch {
      const error = cancel.aborted
        ? "stopped: the turn was cancelled"
        : `no final answer within ${agent.timeoutMs / 1000} s`;
      return failure({ agent: agent.name, error, ...ids(progress.taskId, progress.contextId) });
    }
    return resultOf(agent.name, outcome);
  }
}

function ids(taskId: string | undefined, contextId: string | undefined): Record<string, string> {
  return {
    ...(taskId === undefined ? {} : { task_id: taskId }),
    ...(contextId === undefined ? {} : { context_id: contextId }),
  };
}

/** The model's view of an outcome. */
export function resultOf(agent: string, outcome: A2aOutcome): ToolRunResult {
  if (outcome.kind === "error")
    return failure({
      agent,
      error: outcome.message,
      ...(outcome.status === undefined ? {} : { status: outcome.status }),
    });
  const where = ids(outcome.taskId, outcome.contextId);
  if (outcome.kind === "failed")
    return failure({
      agent,
      state: outcome.state,
      error: `the remote task ended ${outcome.state}${outcome.text ? `: ${outcome.text}` : ""}`,
      ...where,
    });
  const text = capText(outcome.text, MAX_ANSWER_BYTES);
  if (outcome.kind === "waiting")
    return {
      output: {
        agent,
        state: outcome.state,
        question: text.text,
        ...where,
        detail: `${agent} needs more input before it can finish: call ${CALL_A2A} again with task_id ${outcome.taskId} and your answer as the message.`,
      },
      isError: false,
    };
  return {
    output: { agent, state: "completed", text: text.text, ...(text.truncated ? { truncated: true } : {}), ...where },
    isError: false,
  };
}

/** Another runner and catalog with `call_a2a` in front while a remote agent is known. */
export class RemoteAgentTools extends ToolsInFront {
  constructor(inner: ToolRunner & ToolCatalog, caller: RemoteAgentCaller) {
    super(inner, {
      specs: () => {
        const spec = caller.spec();
        return spec === undefined ? [] : [spec];
      },
      toolClass: "mutating",
      source: "other",
      run: (call, signal) => caller.run(call.args, signal),
    });
  }
}
