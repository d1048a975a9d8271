/**
 * Bounded dispatch (docs/svc.md#dispatch-shapes): the workload's one SingleTurn specialist makes
 * one model call on the incident text; its reply must be one JSON value satisfying the specialist's
 * `output_schema` (checked with Ajv). Either way a `dispatch-result` row records it: `valid: true`
 * with the parsed `result`, or `valid: false` with the reply and the problem, and then the run
 * fails with a turn error naming the violation (POST /inject answers 502).
 */
import { basename } from "node:path";
import type { TurnOutcome } from "../../runtime/channel.ts";
import type { OutputSchema, Workload } from "../workload/workload.ts";
import type { AgentProfile, AgentRoster } from "./agent-roster.ts";
import { DISPATCH_RESULT_ROW, type DispatchStep, unusableReply, type ShapeRunner } from "./dispatch-step.ts";
import type { ToolSchemas } from "./tool-schemas.ts";

export class BoundedDispatch implements ShapeRunner {
  readonly #specialist: AgentProfile;
  readonly #schema: OutputSchema;
  readonly #schemas: ToolSchemas;

  constructor(specialist: AgentProfile, schema: OutputSchema, schemas: ToolSchemas) {
    this.#specialist = specialist;
    this.#schema = schema;
    this.#schemas = schemas;
  }

  static forWorkload(workload: Workload, roster: AgentRoster, schemas: ToolSchemas): BoundedDispatch {
    const only = workload.specialists[0];
    const profile = only === undefined ? undefined : roster.specialist(only.name);
    if (only?.outputSchema === undefined || profile === undefined)
      throw new Error(`workload ${workload.name}: bounded dispatch without its one specialist and output_schema`);
    return new BoundedDispatch(profile, only.outputSchema, schemas);
  }

  /** A bounded run asks nothing about its result. */
  readonly question = () => "";

  async run(incident: string, step: DispatchStep): Promise<TurnOutcome> {
    const run = await step.specialist(this.#specialist, incident);
    const reply = run.kind === "done" && typeof run.result.result === "string" ? run.result.result : "";
    const parsed = parseReply(reply);
    const problem =
      "problem" in parsed ? parsed.problem : this.#schemas.problem(this.#schema.schema, parsed.value, "reply");
    const common = { shape: "bounded", specialist: this.#specialist.name, schema: this.#schema.path };
    if (problem !== undefined) {
      await step.record(DISPATCH_RESULT_ROW, { ...common, valid: false, reply, problem });
      return unusableReply(
        `${this.#specialist.name}'s reply does not satisfy its output_schema ${basename(this.#schema.path)}: ${problem}`,
      );
    }
    await step.record(DISPATCH_RESULT_ROW, { ...common, valid: true, result: "value" in parsed ? parsed.value : {} });
    return { status: "completed" };
  }
}

/** The reply as one JSON object; a reply wrapped in one Markdown code fence is read inside it. */
export function parseReply(reply: string): { value: Record<string, unknown> } | { problem: string } {
  const fenced = /^```[A-Za-z]*\n([\s\S]*?)\n?```$/.exec(reply.trim());
  const text = (fenced?.[1] ?? reply).trim();
  if (text === "") return { problem: "the reply is empty, not JSON" };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problem: `the reply is not JSON (${error instanceof Error ? error.message : String(error)})` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { problem: `the reply is JSON but not an object (the schema's top level is an object)` };
  return { value: value as Record<string, unknown> };
}
