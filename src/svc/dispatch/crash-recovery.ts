/**
 * CrashRecovery: at startup, run on every coordinator session a crash left with an answered
 * question not yet carried out (the daemon died between recording a verdict, or approving a change
 * to hand on, and running the session). A call whose intent was committed is never run again (it
 * is ambiguous, left for an operator); an aborted or gate-paused incident is left as it is.
 */
import type { SparError } from "../../core/errors.ts";
import type { AgentRoster } from "./agent-roster.ts";
import { pendingHandover } from "./change-handover.ts";
import { openDelegations } from "./delegation-ledger.ts";
import type { SpecialistGates } from "./specialist-gates.ts";
import { canGoOn } from "./specialist-runs.ts";
import { SVC_INTERNAL, type SvcCore } from "./svc-core.ts";

export interface CrashRecoveryDeps {
  roster: AgentRoster;
  core: SvcCore;
  gates: SpecialistGates;
  /** The refusal of the incident's turns while a gate pause holds it. */
  held(sessionId: string): SparError | undefined;
  /** Whether approving this result hands a change on (a dispatch shape's; false under coordinator). */
  handsOver(result: Record<string, unknown>): boolean;
  logError(message: string): void;
}

export class CrashRecovery {
  readonly #deps: CrashRecoveryDeps;

  constructor(deps: CrashRecoveryDeps) {
    this.#deps = deps;
  }

  /**
   * Resolves with the sessions woken; their turns run in the background. `serves`: whether this
   * daemon serves the incident (another daemon sharing the database may, D493); absent: always.
   */
  async recover(serves?: (sessionId: string) => Promise<boolean>): Promise<string[]> {
    const { core, roster } = this.#deps;
    const woken: string[] = [];
    for (const { record } of await core.sessions.list(SVC_INTERNAL)) {
      if (record.app !== roster.coordinator.app || record.abort || this.#deps.held(record.id)) continue;
      if (!(await this.#mayGoOn(record.id))) continue;
      if (serves && !(await serves(record.id))) continue;
      woken.push(record.id);
      core.turns
        .run({ app: record.app, sid: record.id }, SVC_INTERNAL, "")
        .catch((error: unknown) => this.#deps.logError(`recovering session ${record.id}: ${String(error)}`));
    }
    return woken;
  }

  /** A delegation of the session waits on a specialist that can go on, or an approved change waits to be handed on. */
  async #mayGoOn(sessionId: string): Promise<boolean> {
    const { core, roster } = this.#deps;
    const events = await core.events({ app: roster.coordinator.app, id: sessionId });
    const due = pendingHandover(events);
    if (due !== undefined && this.#deps.handsOver({ proposed_change: due.change })) return true;
    for (const open of openDelegations(events)) {
      const profile = roster.specialist(open.specialist);
      if (profile === undefined) continue;
      const ledger = await this.#deps.gates.ledgerOf({ app: profile.app, sid: sessionId });
      if (ledger !== undefined && canGoOn(ledger)) return true;
    }
    return false;
  }
}
