/**
 * GatedTools: every tool call of a session passes the permission gate here. A call the gate
 * runs goes to the tool source (none is wired yet: the result says the tool is not available);
 * a refused call gets the refusal as its result; a call that needs an operator waits on a prompt
 * published to /perms/stream, recorded durably first, and expired on the approval timeout.
 * Prompts, answers and closed prompts are audit rows, so a restart knows which were pending.
 */
import type { SparError } from "../core/errors.ts";
import type { LiveFrame, SessionEvent, ToolCall } from "../core/events.ts";
import { type GateOutcome, type ModeChange, PermissionGate, type PermsInfo, type PromptFrame, type RespondAnswer } from "../core/permission-gate.ts";
import type { Pattern } from "../core/permission-patterns.ts";
import type { PermissionMode } from "../core/permission-policy.ts";
import type { Result } from "../core/result.ts";
import { classifyTool } from "../core/tool-class.ts";
import type { AnswerInput } from "../core/permission-answer.ts";
import type { ToolRunResult } from "./channel.ts";
import { PromptBroker } from "./prompt-broker.ts";

export interface PermissionSettings {
  mode: PermissionMode;
  approvalTimeoutMs: number;
  allow: readonly Pattern[];
  deny: readonly Pattern[];
}

export interface GatedToolsDeps {
  settings: PermissionSettings;
  now(): Date;
  append(events: SessionEvent[]): Promise<void>;
  header(invocationId: string, author: string): { id: string; ts: string; invocationId: string; author: string };
  frame(frame: LiveFrame): void;
}

export interface ToolVerdict {
  result: ToolRunResult;
  /** Set when this refusal made a refusal storm: the count of suppressed calls. */
  storm?: number;
}

export class GatedTools {
  readonly gate: PermissionGate;
  readonly prompts = new PromptBroker();
  readonly #deps: GatedToolsDeps;

  constructor(deps: GatedToolsDeps, unanswered: readonly string[]) {
    this.#deps = deps;
    this.gate = new PermissionGate({
      mode: deps.settings.mode,
      now: () => deps.now().getTime(),
      approvalTimeoutMs: deps.settings.approvalTimeoutMs,
      allow: deps.settings.allow,
      deny: deps.settings.deny,
    });
    for (const id of unanswered) this.gate.markTurnEnded(id);
  }

  async run(call: ToolCall, turnId: string): Promise<ToolVerdict> {
    const check = this.gate.check(call, classifyTool(call.name), turnId);
    const outcome = check.kind === "ask" ? await this.#ask(check.prompt, check.outcome, turnId) : check;
    if (outcome.kind === "refuse") {
      const storm = this.gate.refusalStorm(turnId);
      const verdict: ToolVerdict = { result: { output: { error: outcome.reason, refused: true }, isError: true } };
      if (storm !== undefined) verdict.storm = storm;
      return verdict;
    }
    return { result: { output: { error: `tool ${JSON.stringify(call.name)} is not available in this session` }, isError: true } };
  }

  /** Answer a prompt; the answer is recorded (with the verified approver) before it is acknowledged. */
  async respond(id: string, decision: string, input: AnswerInput): Promise<Result<RespondAnswer, SparError>> {
    const answer = this.gate.respond(id, decision, input);
    if (!answer.ok) return answer;
    const metadata: Record<string, unknown> = { prompt_id: id, decision: answer.value.approval.decision, tool: answer.value.approval.tool };
    if (answer.value.approval.by !== undefined) metadata.by = answer.value.approval.by;
    await this.#deps.append([{ ...this.#deps.header("gate-answer", "gate/answer"), kind: "audit", name: "permission-answer", metadata }]);
    return answer;
  }

  /** POST /perms/mode: a change writes `attach-perm-mode`; asking for the current mode writes nothing. */
  async setMode(mode: string, caller: string | undefined): Promise<Result<ModeChange, SparError>> {
    const change = this.gate.setMode(mode);
    if (!change.ok || !change.value.changed) return change;
    const metadata: Record<string, unknown> = { from: change.value.previous, to: change.value.mode };
    if (caller !== undefined) metadata.caller = caller;
    await this.#deps.append([{ ...this.#deps.header("attach-perm-mode", "attach/perm-mode"), kind: "audit", name: "attach-perm-mode", metadata }]);
    return change;
  }

  info(): PermsInfo {
    return this.gate.info();
  }

  /** The turn ended: its prompts are gone (410 turn-ended), recorded as closed. */
  async endTurn(turnId: string): Promise<void> {
    await this.#recordGone(this.gate.endTurn(turnId), "turn-ended");
  }

  async #ask(prompt: PromptFrame, outcome: Promise<GateOutcome>, turnId: string): Promise<GateOutcome> {
    await this.#deps.append([{ ...this.#deps.header(turnId, "gate/prompt"), kind: "audit", name: "permission-prompt", metadata: { prompt_id: prompt.id, tool: prompt.tool, kind: prompt.kind } }]);
    this.#deps.frame({ type: "status-update", turn_state: "awaiting_permission" });
    this.prompts.publish(prompt);
    const timer = setTimeout(() => void this.#recordGone(this.gate.expire(), "expired"), this.#deps.settings.approvalTimeoutMs + 5);
    const result = await outcome;
    clearTimeout(timer);
    this.#deps.frame({ type: "status-update", turn_state: "streaming" });
    return result;
  }

  async #recordGone(ids: readonly string[], reason: string): Promise<void> {
    if (ids.length === 0) return;
    await this.#deps.append(ids.map((id) => ({ ...this.#deps.header("gate-gone", "gate/answer"), kind: "audit" as const, name: "permission-gone", metadata: { prompt_id: id, reason } })));
  }
}
