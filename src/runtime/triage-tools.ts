/**
 * The triage tools (D465-D468): the catalog offers `record_plan` (with plan-first on) and
 * `wait_and_verify` (with `tools.wait_and_verify.poll_allow` set), and TriageTools answers their
 * calls in front of the session's tools. `record_plan` writes the session's next plan file
 * (src/plans/plan-files.ts, owner-only) and its `plan-recorded` row, and once that row is committed
 * the plan gate (in GatedTools) lets cluster tools through. `wait_and_verify` polls through the
 * tools below it (src/runtime/wait-and-verify.ts). Every other call goes on unchanged.
 */
import type { ToolCall } from "../core/events.ts";
import {
  PLAN_AUTHOR,
  PLAN_RECORDED,
  RECORD_PLAN,
  RECORD_PLAN_SPEC,
  type TriageSettings,
  parsePlan,
} from "../core/plan-gate.ts";
import type { ToolCatalog, ToolInfo, ToolRunner } from "../core/tool-catalog.ts";
import { WAIT_AND_VERIFY, waitVerifySpec } from "../core/wait-verify.ts";
import type { PlanFiles } from "../plans/plan-files.ts";
import type { ToolVerdict, TurnTools } from "./gated-tools.ts";
import type { Journal } from "./session-journal.ts";
import { TurnCalls } from "./turn-calls.ts";
import { waitAndVerify } from "./wait-and-verify.ts";

/** The names the catalog gains under `settings` (D466: record_plan only with plan-first on). */
function triageNames(settings: TriageSettings | undefined): string[] {
  const names: string[] = [];
  if (settings?.requirePlan) names.push(RECORD_PLAN);
  if (settings?.waitAndVerify) names.push(WAIT_AND_VERIFY);
  return names;
}

/** The daemon's catalog with the triage tools added when configured (a name a tool has already is refused). */
export function withTriageTools<T extends ToolRunner & ToolCatalog>(
  catalog: T,
  settings: TriageSettings | undefined,
): ToolRunner & ToolCatalog {
  const names = new Set(triageNames(settings));
  if (names.size === 0 || settings === undefined) return catalog;
  for (const name of names) if (catalog.has(name)) throw new Error(`${name}: a tool has this name already`);
  const specs = () => [
    ...(settings.requirePlan ? [RECORD_PLAN_SPEC] : []),
    ...(settings.waitAndVerify ? [waitVerifySpec(settings.waitAndVerify)] : []),
  ];
  return {
    has: (name) => names.has(name) || catalog.has(name),
    classOf: (name) => (names.has(name) ? undefined : catalog.classOf(name)),
    run: (call, signal, options) =>
      names.has(call.name)
        ? Promise.resolve({ output: { error: `${call.name} runs only as a session's tool call` }, isError: true })
        : catalog.run(call, signal, options),
    specs: () => [...catalog.specs(), ...specs()],
    list: (): ToolInfo[] => [
      ...catalog.list(),
      ...specs().map((spec) => ({ name: spec.name, description: spec.description, source: "builtin" as const })),
    ],
  };
}

export interface TriageDeps {
  sessionId: string;
  settings: TriageSettings;
  journal: Pick<Journal, "header">;
  /** The sessions' plan files; absent: record_plan answers an error (no plans directory). */
  plans: PlanFiles | undefined;
  /** The session's plan gate (GatedTools): opened once the plan row is committed. */
  gate: { markPlanRecorded(): void };
}

/** A session's tools with record_plan and wait_and_verify answered in front of them. */
export class TriageTools implements TurnTools {
  readonly #inner: TurnTools;
  readonly #deps: TriageDeps;
  readonly #names: ReadonlySet<string>;
  /** wait_and_verify calls running per turn: their waits end with the turn. */
  readonly #waits = new TurnCalls();

  constructor(inner: TurnTools, deps: TriageDeps) {
    this.#inner = inner;
    this.#deps = deps;
    this.#names = new Set(triageNames(deps.settings));
  }

  run(call: ToolCall, turnId: string): Promise<ToolVerdict> {
    if (!this.#names.has(call.name)) return this.#inner.run(call, turnId);
    if (call.name === RECORD_PLAN) return Promise.resolve(this.#recordPlan(call, turnId));
    return this.#wait(call, turnId);
  }

  endTurn(turnId: string): Promise<void> {
    this.#waits.end(turnId);
    return this.#inner.endTurn(turnId);
  }

  /** D466: the file first, then its row in the same write as the result; the gate opens once committed. */
  #recordPlan(call: ToolCall, turnId: string): ToolVerdict {
    const plan = parsePlan(call.args);
    if (!plan.ok) return answered({ error: plan.error }, true);
    const plans = this.#deps.plans;
    if (plans === undefined) return answered({ error: "this daemon has no plans directory (agent.plans_dir)" }, true);
    let written: { path: string; seq: number };
    try {
      written = plans.write(this.#deps.sessionId, plan.value);
    } catch (error) {
      return answered(
        { error: `the plan could not be written: ${error instanceof Error ? error.message : String(error)}` },
        true,
      );
    }
    const row = {
      ...this.#deps.journal.header(turnId, PLAN_AUTHOR),
      kind: "audit" as const,
      name: PLAN_RECORDED,
      metadata: { path: written.path, sequence: written.seq, plan: plan.value },
    };
    return {
      rows: [row],
      committed: () => this.#deps.gate.markPlanRecorded(),
      permission: "plan",
      result: {
        output: {
          path: written.path,
          sequence: written.seq,
          session: this.#deps.sessionId,
          message: "plan recorded: cluster tools are allowed in this session from now on",
        },
        isError: false,
      },
    };
  }

  async #wait(call: ToolCall, turnId: string): Promise<ToolVerdict> {
    const settings = this.#deps.settings;
    const waitSettings = settings.waitAndVerify;
    if (waitSettings === undefined) return answered({ error: "wait_and_verify is not configured" }, true);
    const result = await this.#waits.run(turnId, (signal) =>
      waitAndVerify(call, turnId, {
        settings: waitSettings,
        catalog: () => settings.tools?.() ?? [],
        inner: this.#inner,
        signal,
      }),
    );
    return { result, permission: "wait-and-verify" };
  }
}

function answered(output: Record<string, unknown>, isError: boolean): ToolVerdict {
  return { result: { output, isError }, permission: "plan" };
}
