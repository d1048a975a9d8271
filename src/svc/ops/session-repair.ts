/**
 * SessionRepair: what boot auto-resume finds at the end of an interrupted incident's transcript
 * and the repair before its continuation turn. A coordinator call left without a result (the turn
 * was cut while it ran) is answered with the synthetic result `interrupted before completion`; a
 * cut delegation also answers the calls its specialist's session left dangling the same way (a
 * mutating one whose effect is unknown never gets here: the session is `ambiguous` and skipped
 * first). The answers go through each session's journal and into its conversation, so the next
 * turn's model sees a well-formed history and the core finds nothing left to repair.
 */
import type { ToolCall, ToolResultEvent } from "../../core/events.ts";
import type { SessionKey } from "../../core/session-key.ts";
import type { ExecutorSession } from "../../runtime/executor.ts";
import { eventToMessage, missingToolResults } from "../../runtime/history.ts";
import { OPS_AUTHOR, OPS_INVOCATION } from "./interruption-rows.ts";

/** The synthetic result of a call a stop cut (docs/svc-drain.md#boot-auto-resume). */
export const INTERRUPTED_RESULT = "interrupted before completion";

/** Calls of one session to answer with the synthetic result. */
export interface DanglingRepair {
  key: SessionKey;
  calls: ToolCall[];
}

export type RepairPlan =
  | { kind: "unsupported"; why: string }
  /** The transcript already ends on a completed model turn: nothing to run. */
  | { kind: "completed" }
  | { kind: "resume"; repairs: DanglingRepair[] };

export interface SessionRepairDeps {
  coordinatorApp: string;
  /** The app of the specialist a coordinator call names (undefined: not a specialist of the roster). */
  specialistApp(name: string): string | undefined;
  executorSession(key: SessionKey): Promise<ExecutorSession | undefined>;
}

export class SessionRepair {
  readonly #deps: SessionRepairDeps;

  constructor(deps: SessionRepairDeps) {
    this.#deps = deps;
  }

  /** What the incident's transcript ends on, and the repairs a continuation turn needs first. */
  async plan(sessionId: string): Promise<RepairPlan> {
    const key = { app: this.#deps.coordinatorApp, id: sessionId };
    const coordinator = await this.#deps.executorSession(key);
    if (coordinator === undefined) return { kind: "unsupported", why: "the coordinator session is gone" };
    const history = coordinator.conversation.history;
    const dangling = missingToolResults(history);
    if (dangling.length === 0) {
      const last = history[history.length - 1];
      return last?.role === "assistant" && last.toolCalls.length === 0 ? { kind: "completed" } : resumeWith([]);
    }
    const repairs: DanglingRepair[] = [];
    for (const call of dangling) {
      const app = this.#deps.specialistApp(call.name);
      if (app === undefined) continue;
      const specialist = await this.#deps.executorSession({ app, id: sessionId });
      const calls = specialist ? missingToolResults(specialist.conversation.history) : [];
      if (calls.length > 0) repairs.push({ key: { app, id: sessionId }, calls });
    }
    repairs.push({ key, calls: dangling });
    return resumeWith(repairs);
  }

  /** Answer each repair's calls `interrupted before completion`, durably and in the session's conversation. */
  async apply(repairs: readonly DanglingRepair[]): Promise<void> {
    for (const repair of repairs) {
      const session = await this.#deps.executorSession(repair.key);
      if (session === undefined) continue;
      const rows: ToolResultEvent[] = repair.calls.map((call) => ({
        ...session.journal.header(OPS_INVOCATION, OPS_AUTHOR),
        kind: "tool-result",
        callId: call.callId,
        name: call.name,
        output: { error: INTERRUPTED_RESULT, repaired: true },
        isError: true,
        latencyMs: 0,
      }));
      await session.journal.append(rows);
      for (const row of rows) {
        const message = eventToMessage(row);
        if (message) session.conversation.history.push(message);
      }
    }
  }
}

function resumeWith(repairs: DanglingRepair[]): RepairPlan {
  return { kind: "resume", repairs };
}
