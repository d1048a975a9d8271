/**
 * SpecialistRuns: a specialist run as its own session (app `svc.<name>`, the coordinator
 * session's id) for a coordinator's delegation or a dispatch shape, resolving with its result or
 * the write-gate questions it parked on; carrying a parked one on once its questions are answered;
 * and the coordinator's side of it: a delegation parks the coordinator's turn (`gate-delegation`
 * row) until the specialist can go on, and is then handed its result. The coordinator's
 * `call_a2a` runs here too (the core's tools; the remote agent's own gate answers input-required).
 */
import { SparError } from "../../core/errors.ts";
import type { ToolCall, UserMessageEvent } from "../../core/events.ts";
import type { ExecutorSession } from "../../runtime/executor.ts";
import type { ToolVerdict } from "../../runtime/gated-tools.ts";
import type { SessionTarget } from "../../runtime/session-service.ts";
import { GATE_AUTHOR, type GateLedger } from "../gate/gate-ledger.ts";
import type { AgentProfile, AgentRoster } from "./agent-roster.ts";
import { delegationDoneRow, delegationRow, openDelegations } from "./delegation-ledger.ts";
import type { SpecialistGates } from "./specialist-gates.ts";
import { type SpecialistRun, specialistResult } from "./specialist-result.ts";
import { SVC_INTERNAL, type SvcCore } from "./svc-core.ts";

export class SpecialistRuns {
  readonly #roster: AgentRoster;
  readonly #core: SvcCore;
  readonly #gates: SpecialistGates;

  constructor(roster: AgentRoster, core: SvcCore, gates: SpecialistGates) {
    this.#roster = roster;
    this.#core = core;
    this.#gates = gates;
  }

  /** The core's tools run it (`call_a2a` in front of them): the remote agent is not gated here, its own gate answers input-required. */
  async callRemote(call: ToolCall, signal: AbortSignal): Promise<ToolVerdict> {
    return { result: await this.#core.runner.run(call, signal) };
  }

  /** Run a specialist for the coordinator's call; parks the coordinator when the specialist parked. */
  async delegate(session: ExecutorSession, call: ToolCall, turnId: string): Promise<ToolVerdict> {
    const profile = this.#roster.specialist(call.name);
    if (profile === undefined) throw new SparError("internal", `no specialist ${call.name}`);
    const request = typeof call.args.request === "string" ? call.args.request : JSON.stringify(call.args);
    const run = await this.runSpecialist(session.key.id, profile, request);
    if (run.kind === "done") return { result: { output: { specialist: profile.name, ...run.result }, isError: false } };
    return {
      rows: [delegationRow(session, turnId, call.callId, profile.name, run.interruptIds)],
      result: {
        output: {
          status: "awaiting_operator_approval",
          specialist: profile.name,
          interrupt_ids: run.interruptIds,
          detail: `${profile.name} proposed ${run.keys.join(", ")}: held for an operator's approval. The session is paused until an operator answers; you will be told the outcome.`,
        },
        isError: false,
        endsTurn: true,
      },
    };
  }

  /**
   * Run a specialist on `request` as its own session (app `svc.<name>`, the coordinator session's
   * id) and resolve with its result, or the questions it parked on.
   */
  async runSpecialist(sessionId: string, profile: AgentProfile, request: string): Promise<SpecialistRun> {
    const child: SessionTarget = { app: profile.app, sid: sessionId };
    await this.#core.turns.run(child, SVC_INTERNAL, request);
    return this.#specialistRun(child);
  }

  /**
   * Carry a parked specialist on once its questions are answered: run the answers out and resolve
   * with its result or the questions it parked on next; undefined while it cannot go on.
   */
  async carryOnSpecialist(sessionId: string, profile: AgentProfile): Promise<SpecialistRun | undefined> {
    const child: SessionTarget = { app: profile.app, sid: sessionId };
    const before = await this.#gates.ledgerOf(child);
    if (before === undefined || !canGoOn(before)) return undefined;
    if (before.unsettled().length > 0 || before.behind) await this.#core.turns.run(child, SVC_INTERNAL, "");
    return this.#specialistRun(child);
  }

  async #specialistRun(child: SessionTarget): Promise<SpecialistRun> {
    const pending = (await this.#gates.ledgerOf(child))?.pending() ?? [];
    if (pending.length > 0)
      return {
        kind: "parked",
        interruptIds: pending.map((entry) => entry.call.interruptId),
        keys: pending.map((entry) => entry.call.key),
      };
    return { kind: "done", result: specialistResult(await this.#core.events({ app: child.app ?? "", id: child.sid })) };
  }

  /** Hand the coordinator the results of delegations whose specialist was unblocked; resolves with how many. */
  async continueDelegations(session: ExecutorSession, invocationId: string, signal: AbortSignal): Promise<number> {
    let told = 0;
    for (const open of openDelegations(await this.#core.events(session.key))) {
      if (signal.aborted) return told;
      const profile = this.#roster.specialist(open.specialist);
      if (profile === undefined) continue;
      const run = await this.carryOnSpecialist(session.key.id, profile);
      if (run === undefined) continue;
      const journal = session.journal;
      if (run.kind === "parked") {
        await journal.append([delegationRow(session, invocationId, open.callId, profile.name, run.interruptIds)]);
        continue;
      }
      const notice: UserMessageEvent = {
        ...journal.header(invocationId, GATE_AUTHOR),
        kind: "user-message",
        text: `SPECIALIST ${JSON.stringify({ specialist: profile.name, call_id: open.callId, ...run.result })}`,
        promptIds: [],
      };
      await journal.append([delegationDoneRow(session, invocationId, open.callId, profile.name), notice]);
      session.conversation.history.push({ role: "user", text: notice.text });
      told++;
    }
    return told;
  }
}

/**
 * A specialist session can go on: nothing waits on an operator, and either an answer waits to be
 * carried out or nothing is left ambiguous (an effect nobody acknowledged holds it).
 */
export function canGoOn(ledger: GateLedger): boolean {
  if (ledger.pending().length > 0) return false;
  return ledger.unsettled().length > 0 || ledger.behind || ledger.ambiguous().length === 0;
}
