/**
 * CoordinatorApprovals: the result questions (result-approval.ts) of every loaded coordinator
 * session under a dispatch shape, one ResultApprovals per loaded session (again after an
 * eviction), built on its journal and rows. None under coordinator dispatch: its coordinator is a
 * model, whose results are never asked about.
 */
import type { ExecutorSession } from "../../runtime/executor.ts";
import { SessionScoped } from "./loaded-sessions.ts";
import { ResultApprovals } from "./result-approval.ts";
import type { SvcCore } from "./svc-core.ts";

export class CoordinatorApprovals {
  readonly #core: SvcCore;
  readonly #coordinatorApp: string;
  /** Whether the workload is a dispatch shape (its coordinator session asks result questions). */
  readonly #dispatch: boolean;
  readonly #approvals = new SessionScoped<ResultApprovals>();

  constructor(core: SvcCore, coordinatorApp: string, dispatch: boolean) {
    this.#core = core;
    this.#coordinatorApp = coordinatorApp;
    this.#dispatch = dispatch;
  }

  /** The result questions of a coordinator session: one per loaded session (again after an eviction). */
  approvalsFor(session: ExecutorSession): ResultApprovals {
    return this.#approvals.for(
      session,
      () => new ResultApprovals({ journal: session.journal, readRows: () => this.#core.rows(session.key) }),
    );
  }

  forget(session: ExecutorSession): void {
    this.#approvals.forget(session);
  }

  /** The result questions of the coordinator session, when the workload is a dispatch shape and the session exists. */
  async approvalsOf(sessionId: string): Promise<ResultApprovals | undefined> {
    if (!this.#dispatch) return undefined;
    const key = { app: this.#coordinatorApp, id: sessionId };
    if (!(await this.#core.load(key))) return undefined;
    return this.#approvals.get(key);
  }
}
