/**
 * Resume tokens of gate pauses (docs/svc-pauses.md#resume-tokens): `mrt_` plus the base64url (no
 * padding) of 16 random bytes. Possession is the capability, so the daemon keeps only the token's
 * digest; the clear token exists once, in the answer to the pause that minted it. Also the pause
 * reasons and the lifetime bounds. Pure, no I/O beyond the random source.
 */
import { createHash, randomBytes } from "node:crypto";

export const TOKEN_PREFIX = "mrt_";

/** A token as minted: the prefix and 22 base64url characters. */
const TOKEN_SHAPE = /^mrt_[A-Za-z0-9_-]{22}$/;

/**
 * The 404 of a token no pause of the store minted (D339): what a token is, how long it serves, and
 * where to look instead. Never echoes the token.
 */
export const TOKEN_NOT_FOUND =
  "resume token not found: no pause in this store minted it (an mrt_ token is printed once, when its session is paused, and resumes that pause once, before it expires); `spar svc sessions list --state=paused` lists the paused sessions, and pausing one again prints a new token";

/** Default and longest token lifetime (docs/svc.md#limits: 7 days; `--ttl` only shortens). */
export const MAX_TOKEN_TTL_MS = 7 * 24 * 3_600_000;

/** The pause reasons an operator may give (docs/svc-pauses.md#gate-pause, exactly these). */
export const PAUSE_REASONS = [
  "budget_exhaustion",
  "watchdog_anomaly",
  "cost_cool_down",
  "maintenance_window",
  "rate_limit_backoff",
  "ambiguity",
  "operator",
  "a2a_task_pending",
  "other",
] as const;

export type PauseReason = (typeof PAUSE_REASONS)[number];

export function mintResumeToken(): string {
  return `${TOKEN_PREFIX}${randomBytes(16).toString("base64url")}`;
}

/** What the daemon stores in place of a token: `sha256:` and the hex digest. */
export function tokenDigest(token: string): string {
  return `sha256:${createHash("sha256").update(token).digest("hex")}`;
}

/** The text has the shape of a minted token (a cheap refusal before any lookup). */
export function isResumeToken(text: string): boolean {
  return TOKEN_SHAPE.test(text);
}
