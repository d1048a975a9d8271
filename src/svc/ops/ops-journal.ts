/**
 * OpsJournal: where the drain and boot auto-resume write and read an incident's interruption rows
 * (interruption-rows.ts): the coordinator session's log, through the session's own journal when
 * it is loaded (so the rows go out on its feed in commit order), never its conversation.
 */
import type { AuditEvent, CommittedRow, EventHeader } from "../../core/events.ts";
import type { EventLog } from "../../core/event-log.ts";
import type { SessionKey } from "../../core/session-key.ts";
import type { ExecutorSession } from "../../runtime/executor.ts";
import { OPS_AUTHOR, OPS_INVOCATION } from "./interruption-rows.ts";

export interface OpsJournalDeps {
  /** The app the incidents' coordinator sessions live under (`svc`). */
  coordinatorApp: string;
  /** The loaded session (undefined: no such session). */
  executorSession(key: SessionKey): Promise<ExecutorSession | undefined>;
  log: Pick<EventLog, "read">;
}

export class OpsJournal {
  readonly #deps: OpsJournalDeps;

  constructor(deps: OpsJournalDeps) {
    this.#deps = deps;
  }

  key(sessionId: string): SessionKey {
    return { app: this.#deps.coordinatorApp, id: sessionId };
  }

  /** Commit the row `build` makes on the incident's coordinator session; false when there is no such session. */
  async append(sessionId: string, build: (header: EventHeader) => AuditEvent): Promise<boolean> {
    const session = await this.#deps.executorSession(this.key(sessionId));
    if (session === undefined) return false;
    await session.journal.append([build(session.journal.header(OPS_INVOCATION, OPS_AUTHOR))]);
    return true;
  }

  rows(sessionId: string): Promise<CommittedRow[]> {
    return this.#deps.log.read(this.key(sessionId), 0, Number.MAX_SAFE_INTEGER);
  }
}
