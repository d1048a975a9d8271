/**
 * The rules for an operator's answer to a permission prompt (docs/agent.md#permissions):
 * approver attribution, the deny `reason`, and the texts the model reads when a call is refused.
 * Validation only; the prompt state (pending, answered, gone) belongs to PermissionGate. Pure.
 *
 * Approver: `approver` omitted → accepted, the verified caller (if any) is recorded;
 * equal to the verified caller → accepted; differing from it → 400; any value while nobody was
 * verified → 400. No identity is ever fabricated for an anonymous caller.
 *
 * Reason: only on `deny`. Every whitespace run (newlines included) collapses to one space
 * and the ends are trimmed; more than 500 UTF-8 bytes after that is 400, never truncated. A reason
 * that collapses to nothing counts as no reason.
 */
import { SparError } from "./errors.ts";
import { DECISIONS, type Decision, isDecision } from "./permission-policy.ts";
import { type Result, err, ok } from "./result.ts";

export const REASON_MAX_BYTES = 500;

export interface AnswerInput {
  /** The `approver` the body asserted, if any. */
  approver?: string | undefined;
  /** The identity the transport verified for this caller; absent when nobody was verified. */
  verified?: string | undefined;
  /** The operator's reason; only valid on `deny`. */
  reason?: string | undefined;
}

export interface ValidAnswer {
  decision: Decision;
  /** Who is recorded as having answered: the verified caller, or absent. */
  by?: string;
  /** The collapsed reason (deny only); absent when none or blank. */
  reason?: string;
}

/** Check an answer's body against the approver and reason rules above; every failure is `bad_request`. */
export function validateAnswer(decision: string, input: AnswerInput): Result<ValidAnswer, SparError> {
  if (!isDecision(decision)) {
    return err(new SparError("bad_request", `decision must be one of ${DECISIONS.join(", ")}`));
  }
  const verified = input.verified === "" ? undefined : input.verified;
  if (input.approver !== undefined) {
    if (verified === undefined) {
      return err(
        new SparError(
          "bad_request",
          "approver given but no caller was verified: attribution needs the asserted-caller header or per-caller bearer or mTLS auth",
        ),
      );
    }
    if (input.approver !== verified) {
      return err(new SparError("bad_request", "approver does not match the verified caller"));
    }
  }
  const answer: ValidAnswer = { decision };
  if (verified !== undefined) answer.by = verified;
  if (input.reason !== undefined) {
    if (decision !== "deny") return err(new SparError("bad_request", "reason is accepted only with the deny decision"));
    const reason = collapseWhitespace(input.reason);
    const bytes = utf8Length(reason);
    if (bytes > REASON_MAX_BYTES) {
      return err(
        new SparError(
          "bad_request",
          `reason is ${bytes} bytes after whitespace collapse; the limit is ${REASON_MAX_BYTES}`,
        ),
      );
    }
    if (reason !== "") answer.reason = reason;
  }
  return ok(answer);
}

/** Every whitespace run, newlines included, to one space; ends trimmed. */
export function collapseWhitespace(text: string): string {
  return text.replace(/\s+/gu, " ").trim();
}

const encoder = new TextEncoder();

export function utf8Length(text: string): number {
  return encoder.encode(text).length;
}

/** What the model reads for an operator deny: the refusal, the operator's reason, then the guidance. */
export function operatorRefusal(reason: string | undefined): string {
  const because = reason === undefined ? "" : ` Operator's reason: ${reason}`;
  return `The operator refused this call.${because} Do not re-issue it: an identical call in this turn is refused without asking anyone. Take another approach or end the turn.`;
}

/** What the model reads when it re-issues a call the operator refused earlier in the turn. */
export function reissueRefusal(reason: string | undefined): string {
  const because = reason === undefined ? "" : ` Operator's reason: ${reason}`;
  return `Refused without asking: the operator already refused this identical call in this turn.${because} Do not re-issue it.`;
}

export const TIMEOUT_REFUSAL = "approval timed out";
export const TURN_ENDED_REFUSAL = "turn ended";

export function denyPatternRefusal(source: string): string {
  return `Refused by the deny pattern ${JSON.stringify(source)} of this session.`;
}

export const PLAN_MODE_REFUSAL =
  "Refused: the session is in plan mode, where only read-only tools run. Describe the change instead of making it.";
