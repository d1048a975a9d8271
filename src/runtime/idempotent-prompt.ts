/**
 * Prompt ids for retried injects. A client that may send the same message twice (a watcher
 * whose answer was lost, a CI job that retries) names it with an `Idempotency-Key`; the prompt id
 * is then derived from the session and the key (a UUID-shaped SHA-256, version 8), so the store's
 * one-row-per-prompt-id rule makes the retry a no-op, durably: across a restart and after a turn
 * drained the first copy.
 */
import { createHash } from "node:crypto";

/** At most this many characters, printable ASCII (RFC 9110 token characters and more). */
export const IDEMPOTENCY_KEY_MAX = 256;

export function isIdempotencyKey(value: string): boolean {
  return value.length > 0 && value.length <= IDEMPOTENCY_KEY_MAX && /^[\x21-\x7e]+$/.test(value);
}

/** The prompt id of `key` in the session named `session` (`app/id`). */
export function idempotentPromptId(session: string, key: string): string {
  const bytes = createHash("sha256").update(`${session}\n${key}`).digest().subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x80;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
