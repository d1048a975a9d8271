/**
 * SessionPauses: svc's gate pauses and their resume tokens (docs/svc-pauses.md#gate-pause,
 * docs/svc.md#session-states). A pause is durable rows in the incident's coordinator session
 * (pause-ledger.ts) and, while it holds, every turn kind of every session of the incident is
 * refused 409 (the executors' hold). It owns: minting (`pause`, the token returned once, only its
 * digest kept), `resumeByToken` (consumed once; a replay is a 202 no-op; an expired token leaves
 * the pause in place with the recovery named), `extend`, the timers of timed pauses (armed again at
 * boot from the rows; a timer resumes through the same path as an operator), and voiding on abort.
 */
import { MAX_TIMER_MS } from "../../core/duration.ts";
import { SparError } from "../../core/errors.ts";
import type { EventLog } from "../../core/event-log.ts";
import type { SessionAbort, SessionStore } from "../../core/session-store.ts";
import type { Journal } from "../../runtime/session-journal.ts";
import { abortedError } from "../../runtime/session-abort.ts";
import type { Caller } from "../../surfaces/http/caller-auth.ts";
import type { SessionPauser } from "../ops/session-pauser.ts";
import {
  PAUSE_AUTHOR,
  type PauseFold,
  type PauseRecord,
  extendRow,
  foldPauses,
  pauseRow,
  resumeRow,
} from "./pause-ledger.ts";
import {
  MAX_TOKEN_TTL_MS,
  type PauseReason,
  TOKEN_NOT_FOUND,
  isResumeToken,
  mintResumeToken,
  tokenDigest,
} from "./resume-token.ts";

/** Who consumes the token of a timed pause (docs/svc-pauses.md#resume-with-the-token). */
export const TIMER_IDENTITY = "timer";

/** What the pause unit asks of svc's runtime. */
export interface PauseDeps {
  coordinatorApp: string;
  /** Throws 404 unless the coordinator session exists and `caller` may write to it. */
  authorize(sessionId: string, caller: Caller): Promise<void>;
  /** The coordinator session's journal (loading the session). */
  journalOf(sessionId: string): Promise<Journal>;
  /** The incident's abort marker, if it is aborted. */
  abortOf(sessionId: string): Promise<SessionAbort | undefined>;
  /** Cancel the turns in flight of every session of the incident. */
  interruptIncident(sessionId: string, by: string): Promise<void>;
  /** Start what waited in the incident's inboxes while the pause held. */
  wake(sessionId: string): Promise<void>;
  /** Acknowledge the incident's ambiguous calls (resume `--ack-effects`); resolves with how many. */
  ackEffects(sessionId: string, caller: Caller): Promise<number>;
  now(): Date;
  logError(message: string): void;
}

export interface PauseRequest {
  sessionId: string;
  reason: PauseReason;
  message?: string;
  metadata?: Record<string, unknown>;
  /** RFC 3339: resume then, by the timer. */
  resumeAt?: string;
  /** Also cancel the turn in flight. */
  interrupt: boolean;
  /** Shortens the 7-day lifetime. */
  ttlMs?: number;
  caller: Caller;
}

export interface PauseAnswer {
  token: string;
  session_id: string;
  reason: string;
  expires_at: string;
  resume_at?: string;
  /** An earlier pause of the session held: its token no longer resumes (this one does). */
  replaced: boolean;
}

export interface TokenResumeRequest {
  token: string;
  /** A gate pause takes none (400 when given). */
  response?: unknown;
  ackEffects: boolean;
  caller: Caller;
}

export interface TokenResumeAnswer {
  session_id: string;
  /** The token was consumed before: nothing changed. */
  replay: boolean;
  acknowledged?: number;
}

interface Held {
  fold: PauseFold;
  timer?: ReturnType<typeof setTimeout> | undefined;
  /** Set on abort: every token of the session is void. */
  voided?: true;
}

/** The 409 of a turn on a gate-paused session (its wording: docs/svc-pauses.md#gate-pause). */
export function gatePausedError(sessionId: string, pause: PauseRecord): SparError {
  const why = pause.message === undefined ? pause.reason : `${pause.reason}: ${pause.message}`;
  return new SparError(
    "conflict",
    `session ${JSON.stringify(sessionId)} is gate-paused (${why}); session_paused — resume with the pause token`,
    { state: "paused", pause_reason: pause.reason },
  );
}

export class SessionPauses {
  readonly #deps: PauseDeps;
  /** Every incident with pause rows, by session id. */
  readonly #held = new Map<string, Held>();
  /** Token digest to the incident that minted it. */
  readonly #byDigest = new Map<string, string>();
  /** Per incident, the pause operations one after another. */
  readonly #chains = new Map<string, Promise<unknown>>();
  /** Aborted incidents: every session of them refuses turns, even one created after the abort. */
  readonly #aborted = new Map<string, SessionAbort>();

  constructor(deps: PauseDeps) {
    this.#deps = deps;
  }

  /** At boot, before any turn: every coordinator session's pauses from its rows; timers armed again. */
  async load(store: Pick<SessionStore, "listSessions"> & Pick<EventLog, "read">): Promise<number> {
    let active = 0;
    for (const record of await store.listSessions()) {
      if (record.app !== this.#deps.coordinatorApp) continue;
      if (record.abort) this.#aborted.set(record.id, record.abort);
      const rows = await store.read({ app: record.app, id: record.id }, 0, Number.MAX_SAFE_INTEGER);
      const fold = foldPauses(rows.map((row) => row.event));
      if (fold.tokens.size === 0) continue;
      const held: Held = record.abort ? { fold, voided: true } : { fold };
      this.#adopt(record.id, held);
      if (!held.voided && fold.active) {
        active++;
        this.#arm(record.id);
      }
    }
    return active;
  }

  /**
   * This daemon has just taken the incident's lease (D493): its pauses and abort are read again
   * from its rows (another daemon may have paused, released or aborted it since this one last
   * looked), before any of its turns runs; its timer is armed here.
   */
  async refresh(sessionId: string, store: Pick<SessionStore, "getSession"> & Pick<EventLog, "read">): Promise<void> {
    const key = { app: this.#deps.coordinatorApp, id: sessionId };
    const record = await store.getSession(key);
    if (record === undefined) return;
    if (record.abort) this.#aborted.set(sessionId, record.abort);
    const fold = foldPauses((await store.read(key, 0, Number.MAX_SAFE_INTEGER)).map((row) => row.event));
    const previous = this.#held.get(sessionId);
    clearTimeout(previous?.timer);
    if (fold.tokens.size === 0) {
      this.#held.delete(sessionId);
      return;
    }
    this.#adopt(sessionId, record.abort ? { fold, voided: true } : { fold });
    this.#arm(sessionId);
  }

  /**
   * The incident a resume token belongs to: known here, or found in the coordinator sessions'
   * pause rows (another daemon minted it, D493); 404 when none.
   */
  async incidentOf(token: string, store: Pick<SessionStore, "listSessions"> & Pick<EventLog, "read">): Promise<string> {
    const digest = isResumeToken(token) ? tokenDigest(token) : undefined;
    if (digest === undefined) throw new SparError("not_found", TOKEN_NOT_FOUND);
    const known = this.#byDigest.get(digest);
    if (known !== undefined) return known;
    for (const record of await store.listSessions()) {
      if (record.app !== this.#deps.coordinatorApp) continue;
      const rows = await store.read({ app: record.app, id: record.id }, 0, Number.MAX_SAFE_INTEGER);
      if (foldPauses(rows.map((row) => row.event)).tokens.has(digest)) return record.id;
    }
    throw new SparError("not_found", TOKEN_NOT_FOUND);
  }

  /** The refusal of any turn of the incident while it is aborted or a pause holds it; undefined otherwise. */
  refusal(sessionId: string): SparError | undefined {
    const abort = this.#aborted.get(sessionId);
    if (abort) return abortedError(sessionId, abort);
    const held = this.#held.get(sessionId);
    if (held === undefined || held.voided || held.fold.active === undefined) return undefined;
    return gatePausedError(sessionId, held.fold.active);
  }

  /** The pause holding the incident now, if one does (tests, `svc stop --pause-sessions`). */
  active(sessionId: string): PauseRecord | undefined {
    const held = this.#held.get(sessionId);
    return held?.voided ? undefined : held?.fold.active;
  }

  /** POST /pause: mint a token and hold the incident; a second pause replaces the first's token. */
  pause(request: PauseRequest): Promise<PauseAnswer> {
    return this.#serial(request.sessionId, () => this.#pause(request));
  }

  async #pause(request: PauseRequest): Promise<PauseAnswer> {
    const { sessionId } = request;
    await this.#deps.authorize(sessionId, request.caller);
    const abort = await this.#deps.abortOf(sessionId);
    if (abort) throw abortedError(sessionId, abort);
    const ttl = request.ttlMs ?? MAX_TOKEN_TTL_MS;
    if (!(ttl > 0) || ttl > MAX_TOKEN_TTL_MS)
      throw new SparError("bad_request", "ttl must be above 0 and at most 168h (a token lives 7 days at most)");
    const now = this.#deps.now();
    const token = mintResumeToken();
    const record: PauseRecord = {
      tokenDigest: tokenDigest(token),
      reason: request.reason,
      ...(request.message === undefined ? {} : { message: request.message }),
      ...(request.metadata === undefined ? {} : { metadata: request.metadata }),
      ...(request.resumeAt === undefined ? {} : { resumeAt: request.resumeAt }),
      mintedAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + ttl).toISOString(),
      by: request.caller.identity,
      interrupted: request.interrupt,
    };
    const journal = await this.#deps.journalOf(sessionId);
    await journal.append([pauseRow(journal.header("svc-pause", PAUSE_AUTHOR), record)]);
    const held = this.#held.get(sessionId) ?? { fold: { active: undefined, tokens: new Map() } };
    const replaced = held.fold.active !== undefined;
    const fold = foldPausesOnto(held.fold, record);
    this.#adopt(sessionId, { ...held, fold });
    this.#arm(sessionId);
    if (request.interrupt) await this.#deps.interruptIncident(sessionId, request.caller.identity);
    return {
      token,
      session_id: sessionId,
      reason: record.reason,
      expires_at: record.expiresAt,
      ...(record.resumeAt === undefined ? {} : { resume_at: record.resumeAt }),
      replaced,
    };
  }

  /** POST /resume with a token: consume it and release the pause (no turn runs for it). */
  async resumeByToken(request: TokenResumeRequest): Promise<TokenResumeAnswer> {
    const { sessionId, digest } = this.#find(request.token);
    return this.#serial(sessionId, async () => {
      await this.#deps.authorize(sessionId, request.caller);
      const status = await this.#usable(sessionId, digest);
      if (status === "consumed") return { session_id: sessionId, replay: true };
      if (request.response !== undefined)
        throw new SparError("bad_request", "a gate pause's token takes no response: there is no question to answer");
      const acknowledged = request.ackEffects ? await this.#deps.ackEffects(sessionId, request.caller) : undefined;
      await this.#release(sessionId, digest, request.caller.identity);
      return { session_id: sessionId, replay: false, ...(acknowledged === undefined ? {} : { acknowledged }) };
    });
  }

  /** POST /extend-token: the token's expiry becomes now + ttl (at most 7 days). */
  async extend(token: string, ttlMs: number, caller: Caller): Promise<{ session_id: string; expires_at: string }> {
    const { sessionId, digest } = this.#find(token);
    return this.#serial(sessionId, async () => {
      await this.#deps.authorize(sessionId, caller);
      if (!(ttlMs > 0) || ttlMs > MAX_TOKEN_TTL_MS)
        throw new SparError("bad_request", "ttl must be above 0 and at most 168h (a token lives 7 days at most)");
      const status = await this.#usable(sessionId, digest, { expiredOk: true });
      if (status === "consumed")
        throw new SparError("conflict", "resume token already consumed: the pause was resumed; nothing to extend");
      const expiresAt = new Date(this.#deps.now().getTime() + ttlMs).toISOString();
      const journal = await this.#deps.journalOf(sessionId);
      await journal.append([extendRow(journal.header("svc-pause", PAUSE_AUTHOR), digest, expiresAt, caller.identity)]);
      const held = this.#held.get(sessionId);
      const tokenStatus = held?.fold.tokens.get(digest);
      if (tokenStatus) tokenStatus.expiresAt = expiresAt;
      if (held?.fold.active?.tokenDigest === digest) held.fold.active.expiresAt = expiresAt;
      return { session_id: sessionId, expires_at: expiresAt };
    });
  }

  /** The incident was aborted: its sessions refuse turns, its tokens are void, its timer will not fire. */
  voidPauses(sessionId: string, abort: SessionAbort): void {
    this.#aborted.set(sessionId, abort);
    const held = this.#held.get(sessionId);
    if (held === undefined) return;
    clearTimeout(held.timer);
    held.timer = undefined;
    held.voided = true;
  }

  /** Stop every timer (shutdown); the rows arm them again at the next boot. */
  close(): void {
    for (const held of this.#held.values()) clearTimeout(held.timer);
  }

  #find(token: string): { sessionId: string; digest: string } {
    const digest = isResumeToken(token) ? tokenDigest(token) : undefined;
    const sessionId = digest === undefined ? undefined : this.#byDigest.get(digest);
    if (digest === undefined || sessionId === undefined) throw new SparError("not_found", TOKEN_NOT_FOUND);
    return { sessionId, digest };
  }

  /** 409 unless the token may resume now; `consumed` for a replay (the caller's no-op). */
  async #usable(
    sessionId: string,
    digest: string,
    options: { expiredOk?: boolean } = {},
  ): Promise<"active" | "consumed"> {
    const abort = await this.#deps.abortOf(sessionId);
    const held = this.#held.get(sessionId);
    if (abort || held?.voided) {
      if (abort) throw abortedError(sessionId, abort);
      throw new SparError("conflict", `session ${JSON.stringify(sessionId)} is aborted: its resume tokens are void`);
    }
    const status = held?.fold.tokens.get(digest);
    if (status === undefined) throw new SparError("not_found", TOKEN_NOT_FOUND);
    if (status.state === "consumed") return "consumed";
    if (status.state === "superseded")
      throw new SparError(
        "conflict",
        `resume token replaced by a later pause of session ${JSON.stringify(sessionId)} at ${status.supersededAt}; resume with the token that pause returned`,
      );
    if (!options.expiredOk && Date.parse(status.expiresAt) <= this.#deps.now().getTime())
      throw new SparError(
        "conflict",
        `resume token expired ${status.expiresAt} (the pause remains; \`spar svc sessions extend-token\` is the recovery)`,
        { expires_at: status.expiresAt },
      );
    return "active";
  }

  /** Consume the token and release the pause: the one path of an operator's and a timer's resume. */
  async #release(sessionId: string, digest: string, by: string): Promise<void> {
    const journal = await this.#deps.journalOf(sessionId);
    const at = this.#deps.now().toISOString();
    await journal.append([resumeRow(journal.header("svc-pause", PAUSE_AUTHOR), digest, at, by)]);
    const held = this.#held.get(sessionId);
    if (held === undefined) return;
    const status = held.fold.tokens.get(digest);
    if (status) Object.assign(status, { state: "consumed", consumedAt: at, consumedBy: by });
    if (held.fold.active?.tokenDigest === digest) held.fold.active = undefined;
    clearTimeout(held.timer);
    held.timer = undefined;
    await this.#deps.wake(sessionId);
  }

  /** Arm (again) the timer of the incident's active pause, if it has one. */
  #arm(sessionId: string): void {
    const held = this.#held.get(sessionId);
    if (held === undefined) return;
    clearTimeout(held.timer);
    held.timer = undefined;
    const pause = held.fold.active;
    if (held.voided || pause?.resumeAt === undefined) return;
    const due = Date.parse(pause.resumeAt) - this.#deps.now().getTime();
    const digest = pause.tokenDigest;
    held.timer = setTimeout(
      () => {
        held.timer = undefined;
        if (due > MAX_TIMER_MS) return this.#arm(sessionId);
        this.#serial(sessionId, async () => {
          if (this.active(sessionId)?.tokenDigest !== digest) return;
          await this.#release(sessionId, digest, TIMER_IDENTITY);
        }).catch((error: unknown) => this.#deps.logError(`timed resume of ${sessionId}: ${String(error)}`));
      },
      Math.min(Math.max(due, 0), MAX_TIMER_MS),
    );
  }

  #adopt(sessionId: string, held: Held): void {
    this.#held.set(sessionId, held);
    for (const digest of held.fold.tokens.keys()) this.#byDigest.set(digest, sessionId);
  }

  #serial<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#chains.get(sessionId) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(work);
    this.#chains.set(sessionId, run);
    void run
      .finally(() => {
        if (this.#chains.get(sessionId) === run) this.#chains.delete(sessionId);
      })
      .catch(() => undefined);
    return run;
  }
}

/** The fold after one more `svc-pause` row (the earlier active token superseded). */
function foldPausesOnto(fold: PauseFold, record: PauseRecord): PauseFold {
  const tokens = fold.tokens;
  const previous = fold.active === undefined ? undefined : tokens.get(fold.active.tokenDigest);
  if (previous?.state === "active") Object.assign(previous, { state: "superseded", supersededAt: record.mintedAt });
  tokens.set(record.tokenDigest, { state: "active", expiresAt: record.expiresAt });
  return { active: record, tokens };
}

/**
 * `svc stop --pause-sessions`: gate-pause each session as the daemon (reason `operator`, the stop's
 * reason as the message, no timer, the turns not cancelled here: the drain does that). Resolves
 * with each session's answer (its token) or why it was not paused.
 */
export async function pauseForStop(
  pauses: SessionPauses,
  sessionIds: readonly string[],
  reason: string,
  caller: Caller,
): Promise<Array<{ sessionId: string; answer?: PauseAnswer; error?: string }>> {
  const results: Array<{ sessionId: string; answer?: PauseAnswer; error?: string }> = [];
  for (const sessionId of sessionIds) {
    try {
      const answer = await pauses.pause({
        sessionId,
        reason: "operator",
        message: `svc stop${reason ? `: ${reason}` : ""}`,
        interrupt: false,
        caller,
      });
      results.push({ sessionId, answer });
    } catch (error) {
      results.push({ sessionId, error: error instanceof Error ? error.message : String(error) });
    }
  }
  return results;
}

/** The caller a drain's `--pause-sessions` pauses as: the daemon itself. */
const DAEMON_CALLER: Caller = Object.freeze({ identity: "svc:internal", admin: true, source: "bearer" });

/**
 * `svc stop --pause-sessions`' port onto gate pauses: each session the drain marked is paused with
 * reason `operator` and the stop's classification as its message, its turn left to the drain.
 */
export function gatePauser(pauses: SessionPauses): SessionPauser {
  return {
    pauseSession: async (sessionId, reason) => {
      await pauses.pause({ sessionId, reason: "operator", message: reason, interrupt: false, caller: DAEMON_CALLER });
    },
  };
}
