/**
 * The loop-control tools (D360-D362): the catalog offers `schedule_next_turn`, `return_result`
 * and `report_alert` (GET /tools lists them as builtin), and LoopControlTools answers their calls
 * in front of the permission gate (they steer the session's own loop: no prompt), each with its
 * audit row committed in the same write as the call's result. A schedule ends the turn and, once
 * committed, arms the session's wake (the host keeps the timer); a result ends the turn; an alert
 * lets it go on. Every other call goes on to the session's tools.
 */
import type { ToolCall } from "../core/events.ts";
import { uuidv7 } from "../core/ids.ts";
import type { ToolCatalog, ToolInfo, ToolRunResult, ToolRunner } from "../core/tool-catalog.ts";
import {
  LOOP_ALERT,
  LOOP_CONTROL_SPECS,
  LOOP_RESULT,
  type ScheduledWake,
  WAKE_LOOP_AUTHOR,
  WAKE_SCHEDULED,
  parseAlert,
  parseResult,
  parseSchedule,
} from "../core/wake-loop.ts";
import type { ToolVerdict, TurnTools } from "./gated-tools.ts";
import type { Journal } from "./session-journal.ts";

const NAMES: ReadonlySet<string> = new Set(LOOP_CONTROL_SPECS.map((spec) => spec.name));

/** What a session offers its loop-control tools. */
export interface LoopPort {
  /** A schedule is committed: the session is a wake loop now and its one pending wake is this one. */
  scheduled(wake: ScheduledWake): void;
}

/** The daemon's catalog with the loop-control tools added (a name a tool has already is refused). */
export function withLoopControlTools<T extends ToolRunner & ToolCatalog>(catalog: T): ToolRunner & ToolCatalog {
  for (const name of NAMES) if (catalog.has(name)) throw new Error(`${name}: a tool has this name already`);
  return {
    has: (name) => NAMES.has(name) || catalog.has(name),
    classOf: (name) => (NAMES.has(name) ? undefined : catalog.classOf(name)),
    run: (call, signal, options): Promise<ToolRunResult> =>
      NAMES.has(call.name)
        ? Promise.resolve({
            output: { error: "a loop-control tool runs only as a session's tool call" },
            isError: true,
          })
        : catalog.run(call, signal, options),
    specs: () => [...catalog.specs(), ...LOOP_CONTROL_SPECS],
    list: (): ToolInfo[] => [
      ...catalog.list(),
      ...LOOP_CONTROL_SPECS.map((spec) => ({
        name: spec.name,
        description: spec.description,
        source: "builtin" as const,
      })),
    ],
  };
}

export interface LoopControlDeps {
  journal: Pick<Journal, "header">;
  now(): Date;
  loop: LoopPort;
}

/** A session's tools with the loop-control calls answered in front of the gate. */
export class LoopControlTools implements TurnTools {
  readonly #inner: TurnTools;
  readonly #deps: LoopControlDeps;

  constructor(inner: TurnTools, deps: LoopControlDeps) {
    this.#inner = inner;
    this.#deps = deps;
  }

  run(call: ToolCall, turnId: string): Promise<ToolVerdict> {
    switch (call.name) {
      case "schedule_next_turn":
        return Promise.resolve(this.#schedule(call, turnId));
      case "return_result":
        return Promise.resolve(this.#result(call, turnId));
      case "report_alert":
        return Promise.resolve(this.#alert(call, turnId));
      default:
        return this.#inner.run(call, turnId);
    }
  }

  endTurn(turnId: string): Promise<void> {
    return this.#inner.endTurn(turnId);
  }

  /** D360: the row first (same write as the result), the timer once it is committed; the turn ends. */
  #schedule(call: ToolCall, turnId: string): ToolVerdict {
    const parsed = parseSchedule(call.args, this.#deps.now());
    if (!parsed.ok) return refused(parsed.error);
    const wake: ScheduledWake = { id: uuidv7(), ...parsed.value };
    return {
      rows: [this.#row(turnId, WAKE_SCHEDULED, { ...wake })],
      committed: () => this.#deps.loop.scheduled(wake),
      permission: "loop-control",
      result: { output: { scheduled: true, id: wake.id, at: wake.at }, isError: false, endsTurn: true },
    };
  }

  /** D361: the iteration's result, durable; the turn ends. */
  #result(call: ToolCall, turnId: string): ToolVerdict {
    const parsed = parseResult(call.args);
    if (!parsed.ok) return refused(parsed.error);
    return {
      rows: [this.#row(turnId, LOOP_RESULT, { result: parsed.value })],
      permission: "loop-control",
      result: { output: { recorded: true }, isError: false, endsTurn: true },
    };
  }

  /** D361: an alert row (on /events as every row; no outbound delivery); the turn goes on. */
  #alert(call: ToolCall, turnId: string): ToolVerdict {
    const parsed = parseAlert(call.args);
    if (!parsed.ok) return refused(parsed.error);
    return {
      rows: [this.#row(turnId, LOOP_ALERT, { ...parsed.value })],
      permission: "loop-control",
      result: { output: { recorded: true }, isError: false },
    };
  }

  #row(turnId: string, name: string, metadata: Record<string, unknown>) {
    return { ...this.#deps.journal.header(turnId, WAKE_LOOP_AUTHOR), kind: "audit" as const, name, metadata };
  }
}

function refused(error: string): ToolVerdict {
  return { result: { output: { error }, isError: true }, permission: "loop-control" };
}
