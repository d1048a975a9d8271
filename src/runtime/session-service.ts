/**
 * SessionService: every operation a listener performs on sessions, one method each. Each one
 * authorizes the caller against the session's ACL (a session the caller may not act on is a
 * missing one), refuses what a draining daemon must not start, and finds the live actor; the
 * listeners (attach today; svc, A2A and AG-UI next) parse their wire, call one method and encode
 * the answer. Owns no transport and no wire shape.
 */
import type { Principal, SessionAcl, SessionAction as Access } from "../core/acl.ts";
import { SparError } from "../core/errors.ts";
import { normalizeIdentities } from "../core/identities.ts";
import type { ResetRequest } from "../core/guardrails.ts";
import type { ResumeMode } from "../core/pause-gate.ts";
import type { SessionKey } from "../core/session-key.ts";
import type { SessionAbort, SessionRecord } from "../core/session-store.ts";
import type { InjectResult, InterruptResult, SubagentRef } from "./actor-types.ts";
import type { SessionActor } from "./session-actor.ts";
import type { ResetOutcome } from "./session-guards.ts";
import type { FeedSink, Subscription } from "./session-feed.ts";
import type { ListedSession, SessionHost } from "./session-host.ts";
import type { LiveFrame } from "../core/events.ts";
import type { AnswerInput } from "../core/permission-answer.ts";
import { SESSION_OPS, type SessionOp, type SessionOps } from "./session-ops.ts";
import type { SessionRelay } from "./session-relay.ts";

/** The session a request names: its path's app (qualified shape only) and id. */
export type { Access, Principal };

export interface SessionTarget {
  app: string | undefined;
  sid: string;
}

/** A session the caller may act on, and its live actor. */
export interface OpenSession {
  key: SessionKey;
  actor: SessionActor;
}

export interface CreateRequest {
  app?: string;
  sessionID?: string;
  viewers: readonly string[];
  contributors: readonly string[];
}

export interface AclPatchRequest {
  owner?: string | undefined;
  viewers?: readonly string[] | undefined;
  contributors?: readonly string[] | undefined;
}

const DRAINING = "daemon is shutting down; retry against its successor";

/** What a stream's first frames need: known on the session's daemon, unknown elsewhere (D488). */
export interface StreamOpening {
  turnInFlight: boolean;
  /** The session's usage frame; undefined on a daemon that does not serve the session. */
  usage: LiveFrame | undefined;
}

export class SessionService {
  readonly #host: SessionHost;
  /** Present when several daemons share the database: operations run where the session is served (D489). */
  #relay: SessionRelay | undefined;

  constructor(host: SessionHost) {
    this.#host = host;
  }

  /** Several daemons share the database: relay operations to each session's daemon. */
  useRelay(relay: SessionRelay): void {
    this.#relay = relay;
  }

  /** Run a relayable operation where the session is served (here, without other daemons). */
  async #run<K extends SessionOp>(
    key: SessionKey,
    op: K,
    args: SessionOps[K]["args"],
  ): Promise<SessionOps[K]["result"]> {
    if (this.#relay) return await this.#relay.run(key, op, args);
    return await SESSION_OPS[op](await this.#host.actor(key), args);
  }

  /** Whether sessions can be created and carry ACLs (`--multi-session`). */
  get multiSession(): boolean {
    return this.#host.config.multiSession;
  }

  /** True from the moment the daemon drains or shuts down. */
  get draining(): boolean {
    return this.#host.shuttingDown;
  }

  /** Refuse with 503 and Retry-After while the daemon drains (for operations that would start work). */
  refuseWhileDraining(): void {
    if (this.#host.shuttingDown) throw new SparError("shutting_down", DRAINING);
  }

  /**
   * Whether the session exists, asking no ACL (never answer a caller with it: a session the
   * caller may not see must stay missing to them; for the daemon's own bookkeeping).
   */
  exists(key: SessionKey): boolean {
    return this.#host.has(key);
  }

  /** The session's key when the caller may act on it at `access`; else the masked 404. */
  authorize(target: SessionTarget, caller: Principal, access: Access): Promise<SessionKey> {
    return this.#host.authorize(target.app, target.sid, caller, access);
  }

  /** The session and its live actor, for the caller at `access`. */
  async open(target: SessionTarget, caller: Principal, access: Access): Promise<OpenSession> {
    const key = await this.authorize(target, caller, access);
    return { key, actor: await this.#host.actor(key) };
  }

  /**
   * Run `op` for a caller who may act on the session at `access`, on the daemon serving it (this
   * one without other daemons, D489): the reads and settings a client makes of a live session.
   */
  async call<K extends SessionOp>(
    target: SessionTarget,
    caller: Principal,
    access: Access,
    op: K,
    args: SessionOps[K]["args"],
  ): Promise<SessionOps[K]["result"]> {
    return await this.#run(await this.authorize(target, caller, access), op, args);
  }

  /** The sessions the caller may see, with whether each is live in memory. */
  list(caller: Principal): Promise<ListedSession[]> {
    return this.#host.list(caller);
  }

  /**
   * Create a session owned by the caller. An id that is taken answers 409 to a caller who can see
   * that session and the masked 404 to anyone else (D175).
   */
  async create(caller: Principal, request: CreateRequest): Promise<SessionRecord> {
    if (!this.multiSession) {
      throw new SparError(
        "not_implemented",
        "this daemon has no session factory; start it with --multi-session (or attach.multi_session.enabled) to create sessions",
      );
    }
    const app = request.app ?? this.#host.config.app;
    try {
      return await this.#host.createSession({
        app,
        ...(request.sessionID ? { id: request.sessionID } : {}),
        owner: caller.identity,
        viewers: normalizeIdentities([...request.viewers]),
        contributors: normalizeIdentities([...request.contributors]),
      });
    } catch (error) {
      if (error instanceof SparError && error.code === "conflict" && request.sessionID) {
        await this.authorize({ app, sid: request.sessionID }, caller, "read");
      }
      throw error;
    }
  }

  /** Delete a session (SessionAdmin; 403 for the bootstrap session). */
  remove(target: SessionTarget, caller: Principal): Promise<void> {
    return this.#host.deleteSession(target.app, target.sid, caller);
  }

  async acl(target: SessionTarget, caller: Principal): Promise<SessionAcl> {
    const record = await this.#host.record(await this.authorize(target, caller, "admin"));
    if (!record) throw new SparError("not_found", `session not found: ${target.sid}`);
    return { owner: record.owner, viewers: record.viewers, contributors: record.contributors };
  }

  async updateAcl(target: SessionTarget, caller: Principal, patch: AclPatchRequest): Promise<SessionAcl> {
    if (!this.multiSession) throw new SparError("not_implemented", "sessions carry ACLs only with --multi-session");
    const key = await this.authorize(target, caller, "admin");
    return this.#host.updateAcl(key, {
      ...(patch.owner !== undefined ? { owner: patch.owner } : {}),
      ...(patch.viewers !== undefined ? { viewers: normalizeIdentities([...patch.viewers]) } : {}),
      ...(patch.contributors !== undefined ? { contributors: normalizeIdentities([...patch.contributors]) } : {}),
    });
  }

  /** Queue a message (durable before this answers) and wake a turn unless `wake` is false. */
  async inject(
    target: SessionTarget,
    caller: Principal,
    message: string,
    options: { wake: boolean; idempotencyKey?: string },
  ): Promise<{ key: SessionKey; result: InjectResult }> {
    this.refuseWhileDraining();
    const key = await this.authorize(target, caller, "write");
    const idempotency = options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey };
    return { key, result: await this.#run(key, "inject", { message, wake: options.wake, ...idempotency }) };
  }

  /** Wake the session, queueing `prompt` first when there is one. */
  async wake(
    target: SessionTarget,
    caller: Principal,
    prompt: string | undefined,
  ): Promise<{ key: SessionKey; injected: InjectResult | undefined }> {
    this.refuseWhileDraining();
    const key = await this.authorize(target, caller, "write");
    const { injected } = await this.#run(key, "wake", prompt === undefined ? {} : { prompt });
    return { key, injected: injected ?? undefined };
  }

  /** Subscribe a sink to the session's feed from `since`; the actor gives the boot frames. */
  async subscribe(
    target: SessionTarget,
    caller: Principal,
  ): Promise<OpenSession & { attach(sink: FeedSink, since: number): Subscription }> {
    const session = await this.open(target, caller, "read");
    return { ...session, attach: (sink, since) => session.actor.subscribe(sink, since) };
  }

  /**
   * Subscribe a sink from `since` wherever the session is served: its live feed on its daemon, the
   * log's rows on any other (D488).
   */
  async subscribeAnywhere(
    target: SessionTarget,
    caller: Principal,
  ): Promise<{
    key: SessionKey;
    opening: StreamOpening;
    attach(sink: FeedSink, since: number): Promise<Subscription>;
  }> {
    const key = await this.authorize(target, caller, "read");
    const actor = await this.#host.tryActor(key);
    const followers = this.#host.followers;
    if (actor === undefined && followers !== undefined)
      return {
        key,
        opening: { turnInFlight: false, usage: undefined },
        attach: (sink, since) => followers.subscribe(key, sink, since),
      };
    const live = actor ?? (await this.#host.actor(key));
    return {
      key,
      opening: { turnInFlight: live.turnInFlight, usage: live.usageFrame() },
      attach: async (sink, since) => live.subscribe(sink, since),
    };
  }

  /** Answer a permission prompt (SessionWrite) on the session's daemon. */
  async respond(
    target: SessionTarget,
    caller: Principal,
    answer: { id: string; decision: string; input: AnswerInput },
  ): Promise<{ approver: string | undefined }> {
    const key = await this.authorize(target, caller, "write");
    const { approver } = await this.#run(key, "respond", answer);
    return { approver: approver ?? undefined };
  }

  /**
   * Cancel the turn in flight; with `hold`, park the session first. Names the subagent instances
   * running when it was asked, and with `stopSubagents` stops them (background ones included).
   */
  async interrupt(
    target: SessionTarget,
    caller: Principal,
    hold: boolean,
    by: string | undefined,
    stopSubagents = false,
  ): Promise<{ key: SessionKey; result: InterruptResult; running: SubagentRef[]; stopped: SubagentRef[] }> {
    const key = await this.authorize(target, caller, "write");
    return {
      key,
      ...(await this.#run(key, "interrupt", { hold, stopSubagents, ...(by === undefined ? {} : { by }) })),
    };
  }

  /** Park the session (a running turn finishes). */
  async pause(target: SessionTarget, caller: Principal, reason: string | undefined) {
    const key = await this.authorize(target, caller, "write");
    return { key, ...(await this.#run(key, "pause", reason === undefined ? {} : { reason })) };
  }

  /** Release the park: `continue`, `steer` with the operator's text, or `abandon` what was queued. */
  async resume(target: SessionTarget, caller: Principal, mode: ResumeMode, steer: string | undefined) {
    this.refuseWhileDraining();
    const key = await this.authorize(target, caller, "write");
    return { key, ...(await this.#run(key, "resume", { mode, ...(steer === undefined ? {} : { steer }) })) };
  }

  /**
   * Abort the session (terminal, SessionWrite): the marker is durable on its row before this
   * answers, the turn in flight is cancelled, and every later turn kind is refused with 409.
   * 409 when it is aborted already; an unknown session (or one the caller may not act on) 404.
   */
  async abort(
    target: SessionTarget,
    caller: Principal,
    reason: string,
  ): Promise<{ key: SessionKey; abort: SessionAbort }> {
    const key = await this.authorize(target, caller, "write");
    return { key, abort: await this.#run(key, "abort", { reason, by: caller.identity }) };
  }

  /** Clear guardrail halts (SessionWrite): 400 invalid, 409 when it would trip again; a cleared session drains its inbox. */
  async resetGuardrails(
    target: SessionTarget,
    caller: Principal,
    request: ResetRequest,
    by: string | undefined,
  ): Promise<ResetOutcome> {
    const key = await this.authorize(target, caller, "write");
    return await this.#run(key, "reset", { request, ...(by === undefined ? {} : { by }) });
  }
}
