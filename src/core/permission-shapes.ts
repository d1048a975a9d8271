/**
 * The shapes PermissionGate hands out (prompt frames, outcomes, approval records, the GET /perms
 * body) and the small constructors that go with them. Pure.
 */
import { SparError } from "./errors.ts";
import type { Decision, PermissionMode, PromptKind } from "./permission-policy.ts";

/** The `/perms/stream` prompt frame (attach wire 1.14), as this gate fills it. */
export interface PromptFrame {
  /** 24 hex characters. */
  id: string;
  kind: PromptKind;
  tool: string;
  /** The call's key: the command, the path, or the arguments' JSON. */
  detail?: string;
  /** The first word of a shell command (what `allow-session-verb` would grant). */
  verb?: string;
  /** RFC 3339 time the prompt opened. */
  at: string;
}

/**
 * What happens to a call. `silent` marks a suppressed re-issue: nobody was asked and it counts
 * toward the refusal storm; every other refusal has `silent: false`.
 */
export type GateOutcome = { kind: "run" } | { kind: "refuse"; reason: string; silent: boolean };

/** `check`'s answer; on `ask`, `outcome` settles when the prompt is answered, expires or its turn ends. */
export type CheckResult = GateOutcome | { kind: "ask"; prompt: PromptFrame; outcome: Promise<GateOutcome> };

/** One answered prompt, as GET /perms lists it; `by` only when a verified caller answered. */
export interface ApprovalRecord {
  tool: string;
  key?: string;
  decision: Decision;
  at: string;
  by?: string;
}

/** The GET /perms body. */
export interface PermsInfo {
  mode: PermissionMode;
  allow: string[];
  deny: string[];
  approvals: ApprovalRecord[];
}

export interface RespondAnswer {
  /** What was recorded as the approver (echoed as the response `approver`); absent when nobody was verified. */
  approver?: string;
  /** The outcome delivered to the waiting call. */
  outcome: GateOutcome;
  approval: ApprovalRecord;
}

export interface ModeChange {
  previous: PermissionMode;
  mode: PermissionMode;
  /** False when the requested mode was already set: nothing to record. */
  changed: boolean;
}

export type GoneReason = "expired" | "turn-ended";

export function goneError(reason: GoneReason): SparError {
  const message =
    reason === "expired"
      ? "the prompt expired before the answer arrived; the action was not taken"
      : "the prompt's turn ended before the answer arrived; the action was not taken";
  return new SparError("gone", message, { reason });
}

/** 12 random bytes as 24 lowercase hex characters. */
export function randomPromptId(): string {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}
