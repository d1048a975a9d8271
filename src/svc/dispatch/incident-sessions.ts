/**
 * IncidentSessions: the operator's controls over every session of one incident at once: the
 * coordinator's (app `svc`) and each specialist's (app `svc.<name>`, the same id, D235). Abort is
 * terminal across all of them (the coordinator's marker decides 409 and 404; each specialist gets
 * its own marker, its turn in flight cancelled), a pause's `--interrupt` cancels every turn in
 * flight, and a resumed pause wakes what waited. Each is one call into the runtime core's
 * SessionService; nothing here is a second scheduler.
 */
import type { Principal } from "../../core/acl.ts";
import { SparError } from "../../core/errors.ts";
import type { SessionKey } from "../../core/session-key.ts";
import type { SessionAbort } from "../../core/session-store.ts";
import { abortedError } from "../../runtime/session-abort.ts";
import type { SessionActor } from "../../runtime/session-actor.ts";
import type { Journal } from "../../runtime/session-journal.ts";
import type { SessionService, SessionTarget } from "../../runtime/session-service.ts";

export interface IncidentDeps {
  sessions: SessionService;
  coordinatorApp: string;
  /** The apps of the workload's specialists (`svc.<name>`). */
  specialistApps: readonly string[];
  /** The journal of a loaded coordinator session (its executor was built on it). */
  journalOf(key: SessionKey): Journal | undefined;
  /** The machine identity svc acts under in sessions it drives. */
  internal: Principal;
}

export class IncidentSessions {
  readonly #deps: IncidentDeps;

  constructor(deps: IncidentDeps) {
    this.#deps = deps;
  }

  /** The coordinator session's journal (loaded); 404 when the incident has no session. */
  async journalOf(sessionId: string): Promise<Journal> {
    const { key } = await this.#deps.sessions.open(this.#coordinator(sessionId), this.#deps.internal, "read");
    const journal = this.#deps.journalOf(key);
    if (journal === undefined) throw new SparError("internal", `no journal for session ${sessionId}`);
    return journal;
  }

  /** The incident's abort marker (the coordinator's), undefined when not aborted or unknown. */
  async abortOf(sessionId: string): Promise<SessionAbort | undefined> {
    return (await this.#actor({ app: this.#deps.coordinatorApp, sid: sessionId }))?.record.abort;
  }

  /**
   * Abort the incident: the coordinator under the caller's authority (409 aborted already, 404
   * unknown), then every specialist session of it, all their turns in flight cancelled together
   * (a coordinator waiting on a specialist's turn ends once that turn is cancelled). `marked` is
   * told once the coordinator's marker is durable, before the specialists are aborted.
   */
  async abort(
    sessionId: string,
    caller: Principal,
    reason: string,
    marked: (abort: SessionAbort) => void,
  ): Promise<SessionAbort> {
    const actor = await this.#opened(sessionId, caller);
    const coordinator = actor.abort(reason, caller.identity);
    // The coordinator's marker is committed first: a second abort is its 409 alone.
    const marker = await Promise.race([
      new Promise<SessionAbort>((resolve) => {
        const stop = actor.onAbort((abort) => {
          stop();
          resolve(abort);
        });
      }),
      coordinator,
    ]);
    marked(marker);
    const specialists = this.#deps.specialistApps.map(async (app) => {
      const specialist = await this.#actor({ app, sid: sessionId });
      await specialist?.abort(reason, caller.identity).catch((error: unknown) => {
        if (!(error instanceof SparError && error.code === "conflict")) throw error;
      });
    });
    await Promise.all([coordinator, ...specialists]);
    return marker;
  }

  /** 404 unless the caller may write to the incident; 409 when it is aborted or `held` refuses it (a gate pause). */
  async refuseTurns(sessionId: string, caller: Principal, held: (sessionId: string) => SparError | undefined) {
    const actor = await this.#opened(sessionId, caller);
    const abort = actor.record.abort;
    if (abort) throw abortedError(sessionId, abort);
    const refusal = held(sessionId);
    if (refusal) throw refusal;
  }

  /** Cancel the turn in flight of every session of the incident (a pause's `--interrupt`). */
  async interrupt(sessionId: string, by: string): Promise<void> {
    await Promise.all(
      this.#apps().map(async (app) => {
        const actor = await this.#actor({ app, sid: sessionId });
        if (actor?.turnInFlight) await actor.interrupt(false, by);
      }),
    );
  }

  /** Start what waited in the incident's coordinator inbox (a pause was resumed). */
  async wake(sessionId: string): Promise<void> {
    (await this.#actor(this.#coordinator(sessionId)))?.schedule();
  }

  /**
   * Whether the incident's coordinator session exists, whoever may see it (no ACL, D315): only for
   * a refusal that reads the same to every caller who may not write the session (AG-UI, D343).
   */
  exists(sessionId: string): boolean {
    return this.#deps.sessions.exists({ app: this.#deps.coordinatorApp, id: sessionId });
  }

  /** 404 `session not found: <id>` unless the coordinator session exists and `caller` may write to it. */
  async authorize(sessionId: string, caller: Principal): Promise<void> {
    await this.#opened(sessionId, caller);
  }

  async #opened(sessionId: string, caller: Principal): Promise<SessionActor> {
    try {
      return (await this.#deps.sessions.open(this.#coordinator(sessionId), caller, "write")).actor;
    } catch (error) {
      if (error instanceof SparError && error.code === "not_found")
        throw new SparError("not_found", `session not found: ${sessionId}`);
      throw error;
    }
  }

  #apps(): string[] {
    return [this.#deps.coordinatorApp, ...this.#deps.specialistApps];
  }

  #coordinator(sessionId: string): SessionTarget {
    return { app: this.#deps.coordinatorApp, sid: sessionId };
  }

  /** The live actor of the session, undefined when it does not exist. */
  async #actor(target: SessionTarget): Promise<SessionActor | undefined> {
    try {
      return (await this.#deps.sessions.open(target, this.#deps.internal, "write")).actor;
    } catch (error) {
      if (error instanceof SparError && error.code === "not_found") return undefined;
      throw error;
    }
  }
}
