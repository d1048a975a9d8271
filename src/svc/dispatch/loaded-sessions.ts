/**
 * What svc keeps for each session loaded in memory, keyed by the session as its executor was built
 * on it: LoadedSessions holds every loaded session of the workload (the drain, auto-resume and the
 * incident controls write through its journal); SessionScoped holds one part built per loaded
 * session (a specialist's write gate, a coordinator's result questions). A session evicted and
 * loaded again gets its parts anew; a session's actor leaving memory drops them, unless a newer
 * load of the same key began meanwhile (it keeps its own). Without that every session ever touched
 * stayed (D319).
 */
import { type SessionKey, sessionKeyString } from "../../core/session-key.ts";
import type { ExecutorSession } from "../../runtime/executor.ts";
import type { Journal } from "../../runtime/session-journal.ts";

/** One part per loaded session, built on that session. */
export class SessionScoped<T> {
  readonly #held = new Map<string, { session: ExecutorSession; value: T }>();

  /** The session's part: built on first use, again for a session loaded anew. */
  for(session: ExecutorSession, build: () => T): T {
    const name = sessionKeyString(session.key);
    const existing = this.#held.get(name);
    if (existing?.session === session) return existing.value;
    const value = build();
    this.#held.set(name, { session, value });
    return value;
  }

  /** The part of the session loaded under `key`, if one was built. */
  get(key: SessionKey): T | undefined {
    return this.#held.get(sessionKeyString(key))?.value;
  }

  /** The session left memory: drop its part (not a newer load's). */
  forget(session: ExecutorSession): void {
    const name = sessionKeyString(session.key);
    if (this.#held.get(name)?.session === session) this.#held.delete(name);
  }
}

export class LoadedSessions {
  readonly #sessions = new Map<string, ExecutorSession>();
  readonly #load: (key: SessionKey) => Promise<boolean>;

  /** `load` loads the session (building its executor) when it exists. */
  constructor(load: (key: SessionKey) => Promise<boolean>) {
    this.#load = load;
  }

  /** The session's executor was built on it. */
  track(session: ExecutorSession): void {
    this.#sessions.set(sessionKeyString(session.key), session);
  }

  forget(session: ExecutorSession): void {
    const name = sessionKeyString(session.key);
    if (this.#sessions.get(name) === session) this.#sessions.delete(name);
  }

  /** How many sessions svc keeps state for (executor session, journal, gate, result questions). */
  get size(): number {
    return this.#sessions.size;
  }

  /** The journal of the loaded session (where a coordinator's pause rows are written). */
  journalOf(key: SessionKey): Journal | undefined {
    return this.#sessions.get(sessionKeyString(key))?.journal;
  }

  /** The session as its executor sees it (journal, conversation), loading it; undefined when it does not exist. */
  async executorSession(key: SessionKey): Promise<ExecutorSession | undefined> {
    if (!(await this.#load(key))) return undefined;
    return this.#sessions.get(sessionKeyString(key));
  }
}
