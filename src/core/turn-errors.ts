/**
 * Classifies a failed turn into the open set of turn-error kinds (docs/attach-api.md#turn-errors),
 * with `retryable`, `code` and `hint`. Pure: input is the failure's message and its status or
 * provider code.
 */
import type { TurnErrorKind, TurnErrorPayload } from "./events.ts";

const RULES: ReadonlyArray<{ codes: readonly string[]; kind: TurnErrorKind; retryable: boolean; hint?: string }> = [
  {
    codes: ["401", "403", "PERMISSION_DENIED", "UNAUTHENTICATED"],
    kind: "auth_error",
    retryable: false,
    hint: "check the model provider credentials (API key variable, project access)",
  },
  {
    codes: ["404", "NOT_FOUND"],
    kind: "model_not_found",
    retryable: false,
    hint: "check the model name and the provider or base URL serving it",
  },
  { codes: ["429", "RESOURCE_EXHAUSTED"], kind: "rate_limited", retryable: true },
  // 529: Anthropic's "overloaded", the same temporary condition as a 503.
  {
    codes: ["408", "502", "503", "504", "529", "UNAVAILABLE", "DEADLINE_EXCEEDED"],
    kind: "transient_network",
    retryable: true,
  },
  { codes: ["FAILED_PRECONDITION", "CONFIG"], kind: "config_error", retryable: false },
];

const MAX_MESSAGE = 240;

/** First line, at most 240 characters, `...` appended when cut. */
export function shortenMessage(message: string): string {
  const firstLine = message.split("\n", 1)[0] ?? "";
  return firstLine.length <= MAX_MESSAGE ? firstLine : `${firstLine.slice(0, MAX_MESSAGE)}...`;
}

export function classifyTurnFailure(message: string, code?: string): TurnErrorPayload {
  const normalized = code?.toUpperCase();
  const shortMessage = shortenMessage(message) || "turn failed";
  if (normalized === "400" || normalized === "INVALID_ARGUMENT") {
    return {
      kind: "config_error",
      code: normalized,
      message: shortMessage,
      retryable: false,
      hint: "a malformed request or provider configuration; a bare 400 INVALID_ARGUMENT can also be transient: a real configuration error reproduces on every attempt",
    };
  }
  for (const rule of RULES) {
    if (normalized !== undefined && rule.codes.includes(normalized)) {
      const payload: TurnErrorPayload = { kind: rule.kind, message: shortMessage, retryable: rule.retryable };
      if (code !== undefined) payload.code = normalized;
      if (rule.hint) payload.hint = rule.hint;
      return payload;
    }
  }
  const payload: TurnErrorPayload = { kind: "unknown", message: shortMessage, retryable: false };
  if (normalized !== undefined) payload.code = normalized;
  return payload;
}

export const CANCELED_TURN: TurnErrorPayload = {
  kind: "canceled",
  code: "CANCELED",
  message: "turn canceled",
  retryable: false,
};

/** A turn cancelled because it ran past its wallclock deadline (svc: `budget.max_wallclock_seconds`). */
export function deadlineTurn(deadlineMs: number): TurnErrorPayload {
  return {
    kind: "canceled",
    code: "DEADLINE_EXCEEDED",
    message: `turn canceled: it ran past its ${deadlineMs / 1000} s wallclock budget`,
    retryable: false,
    hint: "raise budget.max_wallclock_seconds, or split the work",
  };
}
