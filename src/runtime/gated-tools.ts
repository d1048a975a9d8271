/**
 * GatedTools: every tool call of a session passes the permission gate here. A call the gate
 * runs goes to the tool runner (the tool-host worker); a call of a tool that does not exist or
 * is disabled answers "not available" without asking anyone; a refused call gets the refusal as
 * its result; a call that needs an operator waits on a prompt published to /perms/stream,
 * recorded durably first, and expired on the approval timeout. Prompts, answers and closed
 * prompts are audit rows, so a restart knows which were pending. Ending a turn (cancel, refusal
 * storm, guardrail) aborts the calls it is running: their processes are killed.
 */
import { TurnCalls } from "./turn-calls.ts";
import type { SparError } from "../core/errors.ts";
import type { CommittedRow, SessionEvent, ToolCall } from "../core/events.ts";
import {
  type GateOutcome,
  type ModeChange,
  PermissionGate,
  type PermsInfo,
  type PromptFrame,
  type RespondAnswer,
} from "../core/permission-gate.ts";
import type { Pattern } from "../core/permission-patterns.ts";
import type { PermissionMode } from "../core/permission-policy.ts";
import type { Result } from "../core/result.ts";
import { classifyTool } from "../core/tool-class.ts";
import type { AnswerInput } from "../core/permission-answer.ts";
import { type ClosedPrompt, PromptBroker } from "./prompt-broker.ts";
import type { Journal } from "./session-journal.ts";
import type { ToolRunResult, ToolRunner } from "../core/tool-catalog.ts";
import { type TriageSettings, isClusterTool, planFirstRefusal } from "../core/plan-gate.ts";

export interface PermissionSettings {
  mode: PermissionMode;
  approvalTimeoutMs: number;
  allow: readonly Pattern[];
  deny: readonly Pattern[];
  /** Where approved calls run. Absent (tests, no tools): every call answers "not available". */
  runner?: ToolRunner;
  /** Plan-first and wait_and_verify (D465-D467); absent: neither (svc, or an agent without them). */
  triage?: TriageSettings;
}

export interface GatedToolsDeps {
  settings: PermissionSettings;
  now(): Date;
  /** Prompts, answers, closed prompts and mode changes are recorded here; prompt status frames too. */
  journal: Journal;
}

export interface ToolVerdict {
  result: ToolRunResult;
  /** Set when this refusal made a refusal storm: the count of suppressed calls. */
  storm?: number;
  /** Rows committed in the same write as the call's result row, before it (a gate's interrupt). */
  rows?: SessionEvent[];
  /** Told once those rows and the result row are committed, with them as committed. */
  committed?: (rows: CommittedRow[]) => void;
  /** The permission answer (`allowed`, `approved`, `refused`, a write gate's outcome): the tool span's attribute. */
  permission?: string;
}

/**
 * What a turn asks of its session's tools: GatedTools itself, or a gate a workload puts in front
 * of it (svc's write gate). `run` answers one proposed call; `endTurn` closes what the turn left.
 */
export interface TurnTools {
  run(call: ToolCall, turnId: string): Promise<ToolVerdict>;
  endTurn(turnId: string): Promise<void>;
}

export class GatedTools implements TurnTools {
  readonly gate: PermissionGate;
  readonly prompts = new PromptBroker();
  readonly #deps: GatedToolsDeps;
  /** Calls running per turn, aborted when the turn ends. */
  readonly #running = new TurnCalls();
  /** Names of the calls executing now, in start order. */
  readonly #executing: string[] = [];
  /** The session has recorded a plan (D465): read back from its log at load, sticky from then on. */
  #planRecorded: boolean;

  constructor(deps: GatedToolsDeps, closed: readonly ClosedPrompt[], planRecorded = false) {
    this.#deps = deps;
    this.#planRecorded = planRecorded;
    this.gate = new PermissionGate({
      mode: deps.settings.mode,
      now: () => deps.now().getTime(),
      approvalTimeoutMs: deps.settings.approvalTimeoutMs,
      allow: deps.settings.allow,
      deny: deps.settings.deny,
    });
    for (const prompt of closed) this.gate.markGone(prompt.id, prompt.reason);
  }

  async run(call: ToolCall, turnId: string): Promise<ToolVerdict> {
    const runner = this.#deps.settings.runner;
    if (runner && !runner.has(call.name)) return { result: notAvailable(call.name) };
    const triage = this.#deps.settings.triage;
    // D465: before the session's plan, every cluster tool call is refused, read-only ones included.
    if (triage?.requirePlan && !this.#planRecorded && isClusterTool(triage, call.name))
      return {
        result: { output: { error: planFirstRefusal(call.name), refused: true, plan_required: true }, isError: true },
        permission: "plan-required",
      };
    const check = this.gate.check(call, runner?.classOf(call.name) ?? classifyTool(call.name), turnId);
    const outcome = check.kind === "ask" ? await this.#ask(check.prompt, check.outcome, turnId) : check;
    if (outcome.kind === "refuse") {
      const storm = this.gate.refusalStorm(turnId);
      const verdict: ToolVerdict = {
        result: { output: { error: outcome.reason, refused: true }, isError: true },
        permission: "refused",
      };
      if (storm !== undefined) verdict.storm = storm;
      return verdict;
    }
    if (!runner) return { result: notAvailable(call.name) };
    const permission = check.kind === "ask" ? "approved" : "allowed";
    return { result: await this.#execute(runner, call, turnId), permission };
  }

  /** `record_plan` committed a plan: cluster tools pass to the permission gate from now on (D465). */
  markPlanRecorded(): void {
    this.#planRecorded = true;
  }

  get planRecorded(): boolean {
    return this.#planRecorded;
  }

  /** The tool executing now (the earliest started when several run): GET /status `current_tool`. */
  get currentTool(): string | undefined {
    return this.#executing[0];
  }

  /** Run an approved call; the turn's end aborts it. */
  async #execute(runner: ToolRunner, call: ToolCall, turnId: string): Promise<ToolRunResult> {
    this.#executing.push(call.name);
    try {
      return await this.#running.run(turnId, async (signal) => await runner.run(call, signal));
    } finally {
      this.#executing.splice(this.#executing.indexOf(call.name), 1);
    }
  }

  /** Answer a prompt; the answer is recorded (with the verified approver) before it is acknowledged. */
  async respond(id: string, decision: string, input: AnswerInput): Promise<Result<RespondAnswer, SparError>> {
    const answer = this.gate.respond(id, decision, input);
    if (!answer.ok) return answer;
    const metadata: Record<string, unknown> = {
      prompt_id: id,
      decision: answer.value.approval.decision,
      tool: answer.value.approval.tool,
    };
    if (answer.value.approval.by !== undefined) metadata.by = answer.value.approval.by;
    await this.#deps.journal.append([
      {
        ...this.#deps.journal.header("gate-answer", "gate/answer"),
        kind: "audit",
        name: "permission-answer",
        metadata,
      },
    ]);
    return answer;
  }

  /** POST /perms/mode: a change writes `attach-perm-mode`; asking for the current mode writes nothing. */
  async setMode(mode: string, caller: string | undefined): Promise<Result<ModeChange, SparError>> {
    const change = this.gate.setMode(mode);
    if (!change.ok || !change.value.changed) return change;
    const metadata: Record<string, unknown> = { from: change.value.previous, to: change.value.mode };
    if (caller !== undefined) metadata.caller = caller;
    await this.#deps.journal.append([
      {
        ...this.#deps.journal.header("attach-perm-mode", "attach/perm-mode"),
        kind: "audit",
        name: "attach-perm-mode",
        metadata,
      },
    ]);
    return change;
  }

  info(): PermsInfo {
    return this.gate.info();
  }

  /** The turn ended: its running calls are aborted and its prompts are gone (410 turn-ended), recorded as closed. */
  async endTurn(turnId: string): Promise<void> {
    this.#running.end(turnId);
    await this.#recordGone(this.gate.endTurn(turnId), "turn-ended");
  }

  async #ask(prompt: PromptFrame, outcome: Promise<GateOutcome>, turnId: string): Promise<GateOutcome> {
    await this.#deps.journal.append([
      {
        ...this.#deps.journal.header(turnId, "gate/prompt"),
        kind: "audit",
        name: "permission-prompt",
        metadata: { prompt_id: prompt.id, tool: prompt.tool, kind: prompt.kind },
      },
    ]);
    this.#deps.journal.frame({ type: "status-update", turnState: "awaiting_permission" });
    this.prompts.publish(prompt);
    const timer = setTimeout(
      () => void this.#recordGone(this.gate.expire(), "expired"),
      this.#deps.settings.approvalTimeoutMs + 5,
    );
    const result = await outcome;
    clearTimeout(timer);
    this.#deps.journal.frame({ type: "status-update", turnState: "streaming" });
    return result;
  }

  async #recordGone(ids: readonly string[], reason: string): Promise<void> {
    if (ids.length === 0) return;
    await this.#deps.journal.append(
      ids.map((id) => ({
        ...this.#deps.journal.header("gate-gone", "gate/answer"),
        kind: "audit" as const,
        name: "permission-gone",
        metadata: { prompt_id: id, reason },
      })),
    );
  }
}

function notAvailable(name: string): ToolRunResult {
  return { output: { error: `tool ${JSON.stringify(name)} is not available in this session` }, isError: true };
}
