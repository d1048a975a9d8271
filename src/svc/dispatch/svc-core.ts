/**
 * SvcCore: the runtime core's parts svc uses, bound once the core has started (svc's parts are
 * built before it: the executor factory is one of the core's settings), what svc builds on them
 * (SessionTurns, IncidentSessions), and the session reads every part of svc shares: a session's
 * rows, its events, and loading it (its executor built, so its gate) when it exists.
 */
import type { Principal } from "../../core/acl.ts";
import { SparError } from "../../core/errors.ts";
import type { CommittedRow, SessionEvent } from "../../core/events.ts";
import type { EventLog } from "../../core/event-log.ts";
import type { SessionKey } from "../../core/session-key.ts";
import type { ToolRunner } from "../../core/tool-catalog.ts";
import type { SessionService } from "../../runtime/session-service.ts";
import type { Journal } from "../../runtime/session-journal.ts";
import type { McpTools } from "./agent-roster.ts";
import { IncidentSessions } from "./incident-sessions.ts";
import { SessionTurns } from "./session-turns.ts";

/** The machine identity svc acts under in its specialists' sessions (never digested in exports). */
export const SVC_INTERNAL: Principal = Object.freeze({ identity: "svc:internal", admin: true });

/** The runtime core's parts svc uses, bound once the core has started. */
export interface SvcCoreParts {
  sessions: SessionService;
  log: EventLog;
  /** Where answered calls run (the core's tools, with `_meta`). */
  runner: ToolRunner;
  /** The tool servers' tools (undefined: none wired). */
  mcp: McpTools | undefined;
}

export interface SvcCoreDeps {
  coordinatorApp: string;
  /** The apps of the workload's specialists (read when the core is bound). */
  specialistApps(): string[];
  /** The journal of a loaded coordinator session (its executor was built on it). */
  journalOf(key: SessionKey): Journal | undefined;
  /** The refusal of a turn of the incident while a gate pause holds it. */
  held(sessionId: string): SparError | undefined;
}

interface Bound extends SvcCoreParts {
  turns: SessionTurns;
  incident: IncidentSessions;
}

export class SvcCore {
  readonly #deps: SvcCoreDeps;
  #bound: Bound | undefined;

  constructor(deps: SvcCoreDeps) {
    this.#deps = deps;
  }

  bind(parts: SvcCoreParts): void {
    const incident = new IncidentSessions({
      sessions: parts.sessions,
      coordinatorApp: this.#deps.coordinatorApp,
      specialistApps: this.#deps.specialistApps(),
      journalOf: (key) => this.#deps.journalOf(key),
      internal: SVC_INTERNAL,
    });
    const turns = new SessionTurns(parts.sessions, (sessionId) => this.#deps.held(sessionId));
    this.#bound = { ...parts, turns, incident };
  }

  get sessions(): SessionService {
    return this.#core().sessions;
  }

  get runner(): ToolRunner {
    return this.#core().runner;
  }

  get turns(): SessionTurns {
    return this.#core().turns;
  }

  /** Every session of one incident at once: abort, interrupt, wake. */
  get incident(): IncidentSessions {
    return this.#core().incident;
  }

  rows(key: SessionKey): Promise<CommittedRow[]> {
    return this.#core().log.read(key, 0, Number.MAX_SAFE_INTEGER);
  }

  async events(key: SessionKey): Promise<SessionEvent[]> {
    return (await this.rows(key)).map((row) => row.event);
  }

  /** Load the session (its executor, so its gate) when it exists. */
  async load(key: SessionKey): Promise<boolean> {
    // Most incidents never start most specialists: their sessions are missing, known without a refusal.
    if (!this.#core().sessions.exists(key)) return false;
    try {
      await this.#core().sessions.open({ app: key.app, sid: key.id }, SVC_INTERNAL, "read");
      return true;
    } catch (error) {
      if (error instanceof SparError && error.code === "not_found") return false;
      throw error;
    }
  }

  #core(): Bound {
    if (this.#bound === undefined) throw new SparError("internal", "svc runtime used before the core started");
    return this.#bound;
  }
}
