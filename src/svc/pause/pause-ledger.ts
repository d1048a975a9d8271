/**
 * The rows of a gate pause and their fold. A pause lives in the incident's coordinator session
 * (app `svc`) as audit rows, never as conversation: `svc-pause` (a pause minted, with its token's
 * digest, reason, message, metadata, timer and expiry), `svc-pause-extend` (a new expiry) and
 * `svc-pause-resume` (the token consumed: by whom, when). The active pause is the last
 * `svc-pause` row whose digest no `svc-pause-resume` row consumed; an earlier pause's token that
 * a later `svc-pause` replaced is `superseded`. Abort voids every pause (read from the session's
 * abort marker, not from these rows). Pure: `foldPauses` is what every reader uses.
 */
import type { AuditEvent, EventHeader, SessionEvent } from "../../core/events.ts";

export const PAUSE_ROW = "svc-pause";
export const PAUSE_EXTEND_ROW = "svc-pause-extend";
export const PAUSE_RESUME_ROW = "svc-pause-resume";
/** The author of the pause rows. */
export const PAUSE_AUTHOR = "svc/pause";

/** A gate pause as its rows leave it. */
export interface PauseRecord {
  /** `sha256:<hex>` of the token; the token itself is never stored. */
  tokenDigest: string;
  reason: string;
  message?: string;
  metadata?: Record<string, unknown>;
  /** RFC 3339: the timer resumes the session then. */
  resumeAt?: string;
  mintedAt: string;
  expiresAt: string;
  /** Who paused. */
  by: string;
  /** The pause also cancelled the turn in flight. */
  interrupted: boolean;
}

export type TokenState = "active" | "consumed" | "superseded";

/** What one token's digest is now. */
export interface TokenStatus {
  state: TokenState;
  expiresAt: string;
  consumedAt?: string;
  consumedBy?: string;
  /** When a later pause replaced it. */
  supersededAt?: string;
}

export interface PauseFold {
  /** The pause holding the session now, if one does. */
  active: PauseRecord | undefined;
  /** Every token the session's pauses minted, by digest. */
  tokens: Map<string, TokenStatus>;
}

export function pauseRow(header: EventHeader, record: PauseRecord): AuditEvent {
  return { ...header, kind: "audit", name: PAUSE_ROW, metadata: pauseMetadata(record) };
}

export function extendRow(header: EventHeader, tokenDigest: string, expiresAt: string, by: string): AuditEvent {
  return {
    ...header,
    kind: "audit",
    name: PAUSE_EXTEND_ROW,
    metadata: { token_digest: tokenDigest, expires_at: expiresAt, by },
  };
}

/** The token consumed: `by` the caller, or `timer` for a timed resume. */
export function resumeRow(header: EventHeader, tokenDigest: string, at: string, by: string): AuditEvent {
  return { ...header, kind: "audit", name: PAUSE_RESUME_ROW, metadata: { token_digest: tokenDigest, at, by } };
}

function pauseMetadata(record: PauseRecord): Record<string, unknown> {
  return {
    token_digest: record.tokenDigest,
    reason: record.reason,
    ...(record.message === undefined ? {} : { message: record.message }),
    ...(record.metadata === undefined ? {} : { metadata: record.metadata }),
    ...(record.resumeAt === undefined ? {} : { resume_at: record.resumeAt }),
    minted_at: record.mintedAt,
    expires_at: record.expiresAt,
    by: record.by,
    interrupted: record.interrupted,
  };
}

/** The session's pauses from its rows (any order-preserving slice that holds them all). */
export function foldPauses(events: Iterable<SessionEvent>): PauseFold {
  let active: PauseRecord | undefined;
  const tokens = new Map<string, TokenStatus>();
  for (const event of events) {
    if (event.kind !== "audit") continue;
    const meta = event.metadata;
    const digest = typeof meta.token_digest === "string" ? meta.token_digest : undefined;
    if (digest === undefined) continue;
    if (event.name === PAUSE_ROW) {
      const record = readPause(meta, digest);
      if (active !== undefined) {
        const previous = tokens.get(active.tokenDigest);
        if (previous?.state === "active")
          Object.assign(previous, { state: "superseded", supersededAt: record.mintedAt });
      }
      active = record;
      tokens.set(digest, { state: "active", expiresAt: record.expiresAt });
    } else if (event.name === PAUSE_EXTEND_ROW) {
      const status = tokens.get(digest);
      if (status !== undefined && typeof meta.expires_at === "string") status.expiresAt = meta.expires_at;
      if (active?.tokenDigest === digest && typeof meta.expires_at === "string") active.expiresAt = meta.expires_at;
    } else if (event.name === PAUSE_RESUME_ROW) {
      const status = tokens.get(digest);
      if (status === undefined) continue;
      status.state = "consumed";
      status.consumedAt = typeof meta.at === "string" ? meta.at : event.ts;
      status.consumedBy = typeof meta.by === "string" ? meta.by : "";
      if (active?.tokenDigest === digest) active = undefined;
    }
  }
  return { active, tokens };
}

function readPause(meta: Record<string, unknown>, digest: string): PauseRecord {
  const text = (key: string) => (typeof meta[key] === "string" ? (meta[key] as string) : undefined);
  const record: PauseRecord = {
    tokenDigest: digest,
    reason: text("reason") ?? "other",
    mintedAt: text("minted_at") ?? "",
    expiresAt: text("expires_at") ?? "",
    by: text("by") ?? "",
    interrupted: meta.interrupted === true,
  };
  const message = text("message");
  if (message !== undefined) record.message = message;
  const resumeAt = text("resume_at");
  if (resumeAt !== undefined) record.resumeAt = resumeAt;
  if (typeof meta.metadata === "object" && meta.metadata !== null && !Array.isArray(meta.metadata))
    record.metadata = meta.metadata as Record<string, unknown>;
  return record;
}
