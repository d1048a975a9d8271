/**
 * SpecialistGates: the write gate of every loaded specialist session, built when its executor is
 * (gate-factory.ts): a session evicted and loaded again gets a new gate on its new journal and
 * conversation (the ledger is folded again). Reads the gates of an incident (loading its
 * specialists' sessions), a specialist's ledger, and the change sets the incident's specialists
 * proposed (each gate's grant keeper checks a write against them).
 */
import type { SessionKey } from "../../core/session-key.ts";
import type { ExecutorSession } from "../../runtime/executor.ts";
import type { SessionTarget } from "../../runtime/session-service.ts";
import type { AuditRecord } from "../gate/audit-log.ts";
import type { ChangeSet } from "../gate/change-set.ts";
import type { GateLedger } from "../gate/gate-ledger.ts";
import type { WriteGate } from "../gate/write-gate.ts";
import type { OnMutation } from "../workload/workload.ts";
import type { AgentProfile, AgentRoster } from "./agent-roster.ts";
import { newWriteGate } from "./gate-factory.ts";
import { SessionScoped } from "./loaded-sessions.ts";
import { oldest } from "./session-questions.ts";
import type { SvcCore } from "./svc-core.ts";
import type { ToolSchemas } from "./tool-schemas.ts";

export interface SpecialistGateDeps {
  roster: AgentRoster;
  schemas: ToolSchemas;
  core: SvcCore;
  onMutation: OnMutation;
  /** `hitl.change_set_ttl`: how long a change-set grant lasts. */
  changeSetTtlMs: number;
  audit(record: AuditRecord): void;
}

export class SpecialistGates {
  readonly #deps: SpecialistGateDeps;
  readonly #gates = new SessionScoped<WriteGate>();

  constructor(deps: SpecialistGateDeps) {
    this.#deps = deps;
  }

  /** The write gate of a specialist session: one per loaded session. */
  gateFor(session: ExecutorSession, profile: AgentProfile): WriteGate {
    const { roster, schemas, core } = this.#deps;
    return this.#gates.for(session, () =>
      newWriteGate(session, profile, {
        roster,
        schemas,
        runner: core.runner,
        onMutation: this.#deps.onMutation,
        changeSetTtlMs: this.#deps.changeSetTtlMs,
        rows: (key) => core.rows(key),
        changeSets: (sessionId) => this.#changeSets(sessionId),
        audit: (record) => this.#deps.audit(record),
      }),
    );
  }

  forget(session: ExecutorSession): void {
    this.#gates.forget(session);
  }

  /** When the oldest question the session's own gate holds was asked; undefined when none waits. */
  async waitingSince(key: SessionKey): Promise<string | undefined> {
    const ledger = await this.#gates.get(key)?.ledger();
    return oldest(ledger?.pending().map(({ call }) => call.parkedAt) ?? []);
  }

  /** The write gates of the session's specialists that exist (loading their sessions). */
  async gatesOf(sessionId: string): Promise<WriteGate[]> {
    const gates: WriteGate[] = [];
    for (const profile of this.#deps.roster.specialists()) {
      const key = { app: profile.app, id: sessionId };
      if (!(await this.#deps.core.load(key))) continue;
      const gate = this.#gates.get(key);
      if (gate) gates.push(gate);
    }
    return gates;
  }

  /** The ledger of a specialist session's gate (loading the session); undefined when it does not exist. */
  async ledgerOf(target: SessionTarget): Promise<GateLedger | undefined> {
    const key = { app: target.app ?? this.#deps.roster.coordinator.app, id: target.sid };
    if (!(await this.#deps.core.load(key))) return undefined;
    return this.#gates.get(key)?.ledger();
  }

  /** The change sets the specialists of this incident proposed (each one's latest). */
  async #changeSets(sessionId: string): Promise<ChangeSet[]> {
    const sets: ChangeSet[] = [];
    for (const profile of this.#deps.roster.specialists()) {
      const set = (await this.ledgerOf({ app: profile.app, sid: sessionId }))?.changeSet;
      if (set !== undefined) sets.push(set);
    }
    return sets;
  }
}
