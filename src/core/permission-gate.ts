/**
 * PermissionGate: decides whether a session's tool call runs, is refused, or waits on an operator
 * prompt, and keeps the prompts, answers, session grants and per-turn refusal memory that go with
 * it. One per live session; nothing is persisted (idle eviction, resume and restart drop patterns
 * added at runtime, grants and the mode change). Pure and clock-injected: it owns no timer (the
 * caller drives `expire()`), does no I/O and writes no audit rows (it reports what the caller
 * records: mode changes, refusal storms).
 *
 * Order of `check`: (1) a re-issue, identical in tool and arguments, of a call the operator denied
 * earlier in the same turn is refused silently and counted for the refusal storm; (2) a deny
 * pattern refuses; (3) an allow pattern or a session grant runs; (4) the mode decides (table in
 * permission-policy.ts; pattern syntax in permission-patterns.ts). When the mode says ask, a prompt
 * is opened and the call waits for `respond`, `expire` or `endTurn`.
 *
 * Grants from answers: `allow-session` and `allow-always` (not persisted here) grant the tool with
 * this exact key; `allow-session-verb` the tool's calls whose key starts with the same first word;
 * `allow-session-tool` every call of the tool; `allow-once` nothing beyond this call.
 *
 * A prompt's life: pending → answered (the id is forgotten: a second answer is `not_found`) or gone,
 * either `expired` (pending for approvalTimeoutMs or longer) or `turn-ended`; a gone id answers
 * `gone` with `details.reason` set to which, for the last 1024 gone ids.
 */
import type { ToolCall } from "./events.ts";
import { SparError } from "./errors.ts";
import {
  type AnswerInput,
  PLAN_MODE_REFUSAL,
  TIMEOUT_REFUSAL,
  TURN_ENDED_REFUSAL,
  denyPatternRefusal,
  operatorRefusal,
  reissueRefusal,
  validateAnswer,
} from "./permission-answer.ts";
import { type Pattern, firstMatch, parsePatterns } from "./permission-patterns.ts";
import { shellSegments } from "./shell-segments.ts";
import {
  type Decision,
  type PermissionMode,
  type ToolClass,
  callKey,
  canonicalJson,
  decideByMode,
  firstWord,
  isPermissionMode,
  promptKindFor,
} from "./permission-policy.ts";
import {
  type ApprovalRecord,
  type CheckResult,
  type GateOutcome,
  type GoneReason,
  type ModeChange,
  type PermsInfo,
  type PromptFrame,
  type RespondAnswer,
  goneError,
  randomPromptId,
} from "./permission-shapes.ts";
import { type Result, err, ok } from "./result.ts";

export type { ApprovalRecord, CheckResult, GateOutcome, GoneReason, ModeChange, PermsInfo, PromptFrame, RespondAnswer };

/** Re-issued refused calls in one turn that make a refusal storm. */
export const REFUSAL_STORM_THRESHOLD = 3;
const GONE_IDS_KEPT = 1024;

export interface PermissionGateOptions {
  mode: PermissionMode;
  now: () => number;
  approvalTimeoutMs: number;
  /** Prompt id minting; defaults to 12 random bytes as 24 hex characters. */
  newPromptId?: () => string;
  /** Patterns from config (already parsed with parsePatterns). */
  allow?: readonly Pattern[];
  deny?: readonly Pattern[];
}

interface PendingPrompt {
  frame: PromptFrame;
  turnId: string;
  tool: string;
  key: string;
  signature: string;
  openedAt: number;
  outcome: Promise<GateOutcome>;
  settle: (outcome: GateOutcome) => void;
}

interface Grant {
  tool: string;
  scope: "key" | "verb" | "tool";
  value: string;
}

interface TurnMemory {
  /** Signatures of calls the operator denied this turn, with the operator's reason. */
  refused: Map<string, string | undefined>;
  /** Re-issues refused silently this turn. */
  suppressed: number;
}

export class PermissionGate {
  #mode: PermissionMode;
  readonly #now: () => number;
  readonly #timeoutMs: number;
  readonly #newPromptId: () => string;
  readonly #allow: Pattern[];
  readonly #deny: Pattern[];
  readonly #grants: Grant[] = [];
  readonly #approvals: ApprovalRecord[] = [];
  readonly #pending = new Map<string, PendingPrompt>();
  readonly #gone = new Map<string, GoneReason>();
  readonly #turns = new Map<string, TurnMemory>();

  constructor(options: PermissionGateOptions) {
    this.#mode = options.mode;
    this.#now = options.now;
    this.#timeoutMs = options.approvalTimeoutMs;
    this.#newPromptId = options.newPromptId ?? randomPromptId;
    this.#allow = [...(options.allow ?? [])];
    this.#deny = [...(options.deny ?? [])];
  }

  get mode(): PermissionMode {
    return this.#mode;
  }

  /** Decide a call (order in the module header). `toolClass` comes from the caller's tool catalog. */
  check(call: ToolCall, toolClass: ToolClass, turnId: string): CheckResult {
    const key = callKey(call);
    const signature = `${call.name}\u0000${canonicalJson(call.args)}`;
    const memory = this.#turns.get(turnId);
    if (memory?.refused.has(signature)) {
      memory.suppressed++;
      return { kind: "refuse", reason: reissueRefusal(memory.refused.get(signature)), silent: true };
    }
    const denied = firstMatch(this.#deny, call, key) ?? this.#deniedCommand(call);
    if (denied !== undefined) return { kind: "refuse", reason: denyPatternRefusal(denied.source), silent: false };
    if (this.#allowed(call, key)) return { kind: "run" };
    const verdict = decideByMode(this.#mode, call, toolClass);
    if (verdict === "run") return { kind: "run" };
    if (verdict === "refuse") return { kind: "refuse", reason: PLAN_MODE_REFUSAL, silent: false };
    return this.#open(call, key, signature, toolClass, turnId);
  }

  /** The deny pattern that refuses this call, if one does: asks nobody and remembers nothing. */
  deniedBy(call: ToolCall): string | undefined {
    return (firstMatch(this.#deny, call, callKey(call)) ?? this.#deniedCommand(call))?.source;
  }

  /**
   * Answer a prompt. The body rules are checked before the prompt's state. Errors: `bad_request`
   * (unknown decision, approver rules, reason rules; the prompt stays pending), `not_found` (never issued or already answered), `gone` with
   * `details.reason` `expired` or `turn-ended`. On success the waiting call gets its outcome.
   */
  respond(id: string, decision: string, input: AnswerInput = {}): Result<RespondAnswer, SparError> {
    const valid = validateAnswer(decision, input);
    if (!valid.ok) return valid;
    const prompt = this.#pending.get(id);
    if (prompt === undefined) {
      const gone = this.#gone.get(id);
      return err(
        gone === undefined
          ? new SparError("not_found", "no pending prompt with this id (never issued or already answered)")
          : goneError(gone),
      );
    }
    if (this.#overdue(prompt)) {
      this.#close(prompt, "expired");
      return err(goneError("expired"));
    }
    this.#pending.delete(id);
    const answer = valid.value;
    const approval: ApprovalRecord = {
      tool: prompt.tool,
      ...(prompt.key === "" ? {} : { key: prompt.key }),
      decision: answer.decision,
      at: this.#stamp(),
    };
    if (answer.by !== undefined) approval.by = answer.by;
    this.#approvals.push(approval);
    let outcome: GateOutcome;
    if (answer.decision === "deny") {
      this.#memory(prompt.turnId).refused.set(prompt.signature, answer.reason);
      outcome = { kind: "refuse", reason: operatorRefusal(answer.reason), silent: false };
    } else {
      this.#grant(prompt.tool, prompt.key, answer.decision);
      outcome = { kind: "run" };
    }
    prompt.settle(outcome);
    return ok({ ...(answer.by === undefined ? {} : { approver: answer.by }), outcome, approval });
  }

  /** The outcome promise of a pending prompt; undefined when the id is not pending. */
  waitFor(id: string): Promise<GateOutcome> | undefined {
    return this.#pending.get(id)?.outcome;
  }

  /** Close every prompt of the turn (turn-ended) and forget the turn's refusals. Returns the closed ids. */
  endTurn(turnId: string): string[] {
    const closed: string[] = [];
    for (const prompt of [...this.#pending.values()]) {
      if (prompt.turnId !== turnId) continue;
      this.#close(prompt, "turn-ended");
      closed.push(prompt.frame.id);
    }
    this.#turns.delete(turnId);
    return closed;
  }

  /** Expire prompts pending for approvalTimeoutMs or longer; their calls are refused. Returns the expired ids. */
  expire(): string[] {
    const expired: string[] = [];
    for (const prompt of [...this.#pending.values()]) {
      if (!this.#overdue(prompt)) continue;
      this.#close(prompt, "expired");
      expired.push(prompt.frame.id);
    }
    return expired;
  }

  /** Suppressed re-issues in the turn once they reach REFUSAL_STORM_THRESHOLD; undefined before. */
  refusalStorm(turnId: string): number | undefined {
    const suppressed = this.#turns.get(turnId)?.suppressed ?? 0;
    return suppressed >= REFUSAL_STORM_THRESHOLD ? suppressed : undefined;
  }

  /** POST /perms/mode: one of ask, acceptEdits, plan, yolo; `allow` is config-only (bad_request). */
  setMode(mode: string): Result<ModeChange, SparError> {
    if (mode === "allow") return err(new SparError("bad_request", "mode allow is set only by config"));
    if (!isPermissionMode(mode))
      return err(new SparError("bad_request", "mode must be one of ask, acceptEdits, plan, yolo"));
    const previous = this.#mode;
    this.#mode = mode;
    return ok({ previous, mode, changed: previous !== mode });
  }

  /** POST /perms/allow: add patterns (an empty list or a malformed entry is bad_request; nothing is added then). */
  addAllow(patterns: readonly string[]): Result<Pattern[], SparError> {
    return addPatterns(this.#allow, patterns);
  }

  /** POST /perms/deny: as addAllow, for the deny list. */
  addDeny(patterns: readonly string[]): Result<Pattern[], SparError> {
    return addPatterns(this.#deny, patterns);
  }

  /** The GET /perms body (copies). */
  info(): PermsInfo {
    return {
      mode: this.#mode,
      allow: this.#allow.map((pattern) => pattern.source),
      deny: this.#deny.map((pattern) => pattern.source),
      approvals: this.#approvals.map((approval) => ({ ...approval })),
    };
  }

  /** Open prompts, oldest first (overdue ones are expired first). */
  pending(): PromptFrame[] {
    this.expire();
    return [...this.#pending.values()].map((prompt) => ({ ...prompt.frame }));
  }

  #open(call: ToolCall, key: string, signature: string, toolClass: ToolClass, turnId: string): CheckResult {
    const tool = call.name;
    const frame: PromptFrame = {
      id: this.#newPromptId(),
      kind: promptKindFor(toolClass),
      tool,
      detail: key,
      at: this.#stamp(),
    };
    const verb = typeof call.args.command === "string" ? firstWord(call.args.command) : "";
    if (toolClass === "shell" && verb !== "") frame.verb = verb;
    let settle: (outcome: GateOutcome) => void = () => {};
    const outcome = new Promise<GateOutcome>((resolve) => {
      settle = resolve;
    });
    this.#pending.set(frame.id, { frame, turnId, tool, key, signature, openedAt: this.#now(), outcome, settle });
    return { kind: "ask", prompt: { ...frame }, outcome };
  }

  /** A prompt from before a restart that cannot be answered any more: answers get 410 with its reason. */
  markGone(id: string, reason: GoneReason): void {
    if (!this.#pending.has(id)) this.#rememberGone(id, reason);
  }

  #rememberGone(id: string, reason: GoneReason): void {
    this.#gone.set(id, reason);
    if (this.#gone.size > GONE_IDS_KEPT) {
      const oldest = this.#gone.keys().next().value;
      if (oldest !== undefined) this.#gone.delete(oldest);
    }
  }

  #close(prompt: PendingPrompt, reason: GoneReason): void {
    this.#pending.delete(prompt.frame.id);
    this.#rememberGone(prompt.frame.id, reason);
    prompt.settle({
      kind: "refuse",
      reason: reason === "expired" ? TIMEOUT_REFUSAL : TURN_ENDED_REFUSAL,
      silent: false,
    });
  }

  #overdue(prompt: PendingPrompt): boolean {
    return this.#now() - prompt.openedAt >= this.#timeoutMs;
  }

  #grant(tool: string, key: string, decision: Exclude<Decision, "deny">): void {
    let grant: Grant;
    switch (decision) {
      case "allow-once":
        return;
      case "allow-session":
      case "allow-always":
        grant = { tool, scope: "key", value: key };
        break;
      case "allow-session-verb":
        grant = { tool, scope: "verb", value: firstWord(key) };
        break;
      case "allow-session-tool":
        grant = { tool, scope: "tool", value: "" };
        break;
    }
    if (
      !this.#grants.some(
        (known) => known.tool === grant.tool && known.scope === grant.scope && known.value === grant.value,
      )
    )
      this.#grants.push(grant);
  }

  /** An allow pattern or a grant covers the call; for `bash`, every command of its line (D168). */
  #allowed(call: ToolCall, key: string): boolean {
    if (call.name !== "bash") return firstMatch(this.#allow, call, key) !== undefined || this.#granted(call.name, key);
    // The whole tool (`bash`, `bash(*)`, allow-session-tool), or this exact line approved before.
    if (this.#allow.some((pattern) => pattern.tool === "bash" && (pattern.glob === undefined || pattern.glob === "*")))
      return true;
    if (
      this.#grants.some(
        (grant) => grant.tool === "bash" && (grant.scope === "tool" || (grant.scope === "key" && grant.value === key)),
      )
    )
      return true;
    // A glob or a verb speaks of one command: `bash(echo *)` must not run `echo hi; rm -rf ~`.
    const commands = shellSegments(key);
    if (commands === undefined || commands.length === 0) return false;
    return commands.every(
      (command) =>
        firstMatch(this.#allow, { name: "bash", args: { command } }, command) !== undefined ||
        this.#grants.some(
          (grant) => grant.tool === "bash" && grant.scope === "verb" && grant.value === firstWord(command),
        ),
    );
  }

  /** A deny pattern matching any one command of a `bash` line (`bash(rm *)` catches `ls; rm -rf x`). */
  #deniedCommand(call: ToolCall): Pattern | undefined {
    if (call.name !== "bash" || typeof call.args.command !== "string") return undefined;
    for (const command of shellSegments(call.args.command) ?? []) {
      const hit = firstMatch(this.#deny, { name: "bash", args: { command } }, command);
      if (hit !== undefined) return hit;
    }
    return undefined;
  }

  #granted(tool: string, key: string): boolean {
    return this.#grants.some(
      (grant) =>
        grant.tool === tool &&
        (grant.scope === "tool" || (grant.scope === "key" ? grant.value === key : grant.value === firstWord(key))),
    );
  }

  #memory(turnId: string): TurnMemory {
    let memory = this.#turns.get(turnId);
    if (memory === undefined) {
      memory = { refused: new Map(), suppressed: 0 };
      this.#turns.set(turnId, memory);
    }
    return memory;
  }

  #stamp(): string {
    return new Date(this.#now()).toISOString();
  }
}

function addPatterns(list: Pattern[], entries: readonly string[]): Result<Pattern[], SparError> {
  if (entries.length === 0) return err(new SparError("bad_request", "patterns must not be empty"));
  const parsed = parsePatterns(entries);
  if (!parsed.ok) return err(new SparError("bad_request", parsed.error));
  for (const pattern of parsed.value) if (!list.some((known) => known.source === pattern.source)) list.push(pattern);
  return ok(parsed.value);
}
