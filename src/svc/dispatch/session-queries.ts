/**
 * SessionQueries: the reads svc's listeners, its drain and its boot auto-resume make of an
 * incident: its state and the questions it waits on, a dispatch shape's result and result
 * questions, a session as its executor sees it and its events. Read-only: answering and aborting
 * are OperatorActions'.
 */
import type { SessionEvent } from "../../core/events.ts";
import type { SessionKey } from "../../core/session-key.ts";
import type { ExecutorSession } from "../../runtime/executor.ts";
import type { SessionStatus } from "../listener/listener-port.ts";
import type { CoordinatorApprovals } from "./coordinator-approvals.ts";
import { type DispatchResult, dispatchResultOf } from "./dispatch-result.ts";
import type { LoadedSessions } from "./loaded-sessions.ts";
import type { ResultApprovals } from "./result-approval.ts";
import type { SessionQuestions } from "./session-questions.ts";
import type { SvcCore } from "./svc-core.ts";

export interface SessionQueryDeps {
  core: SvcCore;
  coordinatorApp: string;
  /** Whether the workload is a dispatch shape (its runs record a result). */
  dispatch: boolean;
  loaded: LoadedSessions;
  approvals: CoordinatorApprovals;
  questions: SessionQuestions;
}

export class SessionQueries {
  readonly #deps: SessionQueryDeps;

  constructor(deps: SessionQueryDeps) {
    this.#deps = deps;
  }

  /** The session's state as its gate and result rows say, and the questions it waits on. */
  status(sessionId: string): Promise<SessionStatus> {
    return this.#deps.questions.status(sessionId);
  }

  /** The result the run of `promptId` recorded on the session (dispatch shapes), if it did. */
  async resultOf(sessionId: string, promptId: string): Promise<DispatchResult | undefined> {
    if (!this.#deps.dispatch) return undefined;
    return dispatchResultOf(await this.#deps.core.events({ app: this.#deps.coordinatorApp, id: sessionId }), promptId);
  }

  /** The result questions of the coordinator session, when the workload is a dispatch shape and the session exists. */
  approvalsOf(sessionId: string): Promise<ResultApprovals | undefined> {
    return this.#deps.approvals.approvalsOf(sessionId);
  }

  /** The session as its executor sees it (journal, conversation), loading it; undefined when it does not exist. */
  executorSession(key: SessionKey): Promise<ExecutorSession | undefined> {
    return this.#deps.loaded.executorSession(key);
  }

  events(session: ExecutorSession): Promise<SessionEvent[]> {
    return this.#deps.core.events(session.key);
  }
}
