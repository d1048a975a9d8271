/**
 * WriteGate: svc's write gate in front of one session's tools (docs/svc.md#the-write-gate,
 * docs/svc.md#session-states).
 * A read-only call goes straight to the session's GatedTools. A mutating call is checked against
 * the deny policy, then handled by `hitl.on_mutation`: `apply` runs it, `dry_run` answers what it
 * would have done, `require_approval` parks it: an interrupt row with a stable id, committed with
 * a stand-in result, and the turn ends. `answer` records an operator's verdict (the question
 * stays open for a refused scope); `settle`, at the start of the session's next execution, carries
 * out answered verdicts: an approved call's intent row is committed before the call runs, with
 * its interrupt id as the idempotency key in MCP `_meta`, and its effect row after, so a crash
 * anywhere leaves it run at most once (an intent without an effect is never run again: the
 * session turns ambiguous until an operator acknowledges it).
 */
import { gateParkSpan, gateVerdictSpan } from "../../telemetry/gate-trace.ts";
import type { AuditEvent, CommittedRow, SessionEvent, ToolCall, UserMessageEvent } from "../../core/events.ts";
import { uuidv7 } from "../../core/ids.ts";
import type { ChatMessage } from "../../core/model.ts";
import type { ToolRunResult, ToolRunner } from "../../core/tool-catalog.ts";
import { failpoint } from "../../runtime/failpoint.ts";
import type { GatedTools, ToolVerdict, TurnTools } from "../../runtime/gated-tools.ts";
import type { Journal } from "../../runtime/session-journal.ts";
import type { OnMutation } from "../workload/workload.ts";
import type { AuditRecord } from "./audit-log.ts";
import { callKey } from "./call-key.ts";
import { type ChangeSetQuestion, questionMessage } from "./change-set.ts";
import type { GrantKeeper } from "./grant-keeper.ts";
import {
  type AuditOutcome,
  GATE_AUTHOR,
  type GateEntry,
  GateLedger,
  type Grant,
  type ParkedCall,
} from "./gate-ledger.ts";
import { GateRows, ambiguousRefusal, gateNotice, refusalOutput, verdictRecord } from "./gate-rows.ts";
import { judgeVerdict } from "./verdict.ts";

/** What the gate knows about the tools of its workload. */
export interface GatePolicy {
  onMutation: OnMutation;
  /** The call only reads (MCP tools mutate unless the workload's catalog marks them read-only). */
  readOnly(tool: string): boolean;
  /** The tool as the operator reads it (the server's own name), and its declared input schema. */
  describe(tool: string): { name: string; inputSchema?: Record<string, unknown> };
  /** Why these arguments break the tool's input schema; undefined when they satisfy it. */
  schemaProblem(tool: string, args: Record<string, unknown>): string | undefined;
}

export interface WriteGateDeps {
  sessionId: string;
  /** The agent whose calls this gate sees (the coordinator or a specialist). */
  agent: string;
  journal: Journal;
  /** The session's own tools: the deny policy, and where read-only and `apply` calls run. */
  inner: GatedTools;
  /** Where answered calls run (with `_meta`). */
  runner: ToolRunner;
  /** The session's conversation (outcomes told outside an execution are added to it). */
  history(): ChatMessage[];
  /** Start the tool servers not started yet (after a restart, before an answered call runs). */
  prepareTools(): Promise<void>;
  /** The session's rows, to fold the ledger from. */
  readRows(): Promise<CommittedRow[]>;
  policy: GatePolicy;
  /** Change sets and grants. */
  grants: GrantKeeper;
  audit(record: AuditRecord): void;
}

export type AnswerOutcome =
  | { kind: "malformed"; detail: string }
  | { kind: "unknown" }
  | { kind: "answered"; outcome: AuditOutcome; decidedAt: string }
  | { kind: "refused"; outcome: AuditOutcome; detail: string }
  | { kind: "resolved"; outcome: AuditOutcome; detail?: string };

const APPROVAL_WAIT =
  "The session is paused until an operator answers. Do not retry this call and do not try to make the same change another way meanwhile.";

export class WriteGate implements TurnTools {
  readonly #deps: WriteGateDeps;
  readonly #rows: GateRows;
  #ledger: Promise<GateLedger> | undefined;
  /** Answers and settles one at a time: two answers to one question cannot both resolve it. */
  #chain: Promise<unknown> = Promise.resolve();

  constructor(deps: WriteGateDeps) {
    this.#deps = deps;
    this.#rows = new GateRows(deps.journal, deps.agent, deps.sessionId, (tool) => deps.policy.describe(tool).name);
  }

  /** The ledger as committed (folded from the rows once, then kept up to date). */
  ledger(): Promise<GateLedger> {
    this.#ledger ??= this.#deps.readRows().then((rows) => GateLedger.fold(rows));
    return this.#ledger;
  }

  async run(call: ToolCall, turnId: string): Promise<ToolVerdict> {
    const { policy, inner } = this.#deps;
    if (policy.readOnly(call.name)) return inner.run(call, turnId);
    const ledger = await this.ledger();
    const dangling = ledger.ambiguous();
    if (dangling.length > 0) return { result: ambiguousRefusal(dangling) };
    const described = policy.describe(call.name);
    const key = callKey(described.name, call.args);
    const denied = inner.gate.deniedBy(call);
    if (denied !== undefined) {
      const detail = `the call matches the deny pattern ${JSON.stringify(denied)}`;
      return this.#audited("denied_by_policy", call, turnId, key, detail, {
        output: { error: "denied_by_policy", detail },
        isError: true,
      });
    }
    if (policy.onMutation === "apply") {
      return this.#runAuthorized(call, turnId, key, {
        outcome: "apply",
        message: "applied without approval (hitl.on_mutation apply)",
        extra: { run_args: call.args, authority: "policy" },
      });
    }
    if (policy.onMutation === "dry_run") {
      const detail = "hitl.on_mutation is dry_run: the call was not made";
      return this.#audited("dry_run", call, turnId, key, detail, {
        output: { status: "dry_run", tool: described.name, args: call.args, detail },
        isError: false,
      });
    }
    return this.#gateCall(call, turnId, key, described.name, ledger);
  }

  /** A mutating call under `require_approval`: fired on a grant that still covers it, else parked. */
  async #gateCall(call: ToolCall, turnId: string, key: string, tool: string, ledger: GateLedger): Promise<ToolVerdict> {
    const grants = this.#deps.grants;
    const check = await grants.check(ledger, tool, call.args, turnId);
    if (check.kind === "covered") return this.#fireGrant(call, turnId, key, check.grant);
    if (check.kind === "stale" && check.void !== undefined) {
      await this.#commit([check.void]);
    }
    const question = await grants.question(tool, call.args);
    return this.#park(call, turnId, key, question, check.kind === "stale" ? check.reason : undefined);
  }

  /** Run a call a change-set grant covers, with no question. */
  #fireGrant(call: ToolCall, turnId: string, key: string, grant: Grant): Promise<ToolVerdict> {
    const extra: Record<string, unknown> = {
      run_args: call.args,
      scope: "change_set",
      authority: "change_set_grant",
      change_set: grant.source,
      grant_id: grant.grantId,
    };
    if (grant.approver !== undefined) extra.approver = grant.approver;
    if (grant.note !== undefined) extra.note = grant.note;
    return this.#runAuthorized(call, turnId, key, {
      outcome: "approved_by_change_set",
      message: `authorized by the change-set grant ${grant.grantId}`,
      extra,
      grantId: grant.grantId,
    });
  }

  /**
   * Run a call nobody is asked about (a grant covers it, or the policy applies it) at most once:
   * rows answering it as if it had asked, its intent, the call, its effect.
   */
  async #runAuthorized(
    call: ToolCall,
    turnId: string,
    key: string,
    how: { outcome: AuditOutcome; message: string; extra: Record<string, unknown>; grantId?: string },
  ): Promise<ToolVerdict> {
    const interruptId = `gate-${uuidv7()}`;
    const grant = how.grantId === undefined ? {} : { grant_id: how.grantId };
    const interrupt = this.#rows.interruptRow(turnId, interruptId, call, key, how.message, grant);
    const decided = this.#rows.auditRow(turnId, how.outcome, interruptId, call, key, {
      ...how.extra,
      detail: how.message,
    });
    await this.#commit([interrupt, decided]);
    this.#deps.audit(this.#rows.record(how.outcome, call, key, { interruptId, detail: how.message }));
    const idempotencyKey = how.grantId ?? interruptId;
    const result = await this.#runOnce(call, interruptId, idempotencyKey, turnId, new AbortController().signal);
    await this.#commit([this.#rows.effectRow(turnId, interruptId, { ...result, ran: true })]);
    return { result };
  }

  /** A call the gate answers on its own: its audit row commits with the result the model reads. */
  #audited(
    outcome: AuditOutcome,
    call: ToolCall,
    turnId: string,
    key: string,
    detail: string,
    result: ToolRunResult,
  ): ToolVerdict {
    const row = this.#rows.auditRow(turnId, outcome, undefined, call, key, { detail });
    return {
      result,
      rows: [row],
      committed: (written) => {
        this.#fold(written);
        this.#deps.audit(this.#rows.record(outcome, call, key, { detail }));
      },
    };
  }

  /** A report (finish_task): its proposed change set, checked, is committed with it. */
  report(call: ToolCall, turnId: string): ToolVerdict {
    const proposed = this.#deps.grants.propose(call, turnId);
    if (!proposed.ok) {
      return this.#audited("change_set_refused", call, turnId, call.name, proposed.error, {
        output: { error: "invalid_proposed_change", detail: proposed.error },
        isError: true,
      });
    }
    const finished: ToolVerdict = { result: { output: { status: "finished" }, isError: false, endsTurn: true } };
    const row = proposed.value;
    return row === undefined ? finished : { ...finished, rows: [row], committed: (written) => this.#fold(written) };
  }

  async endTurn(turnId: string): Promise<void> {
    await this.#deps.inner.endTurn(turnId);
  }

  /** Park a mutating call: the interrupt and its audit row commit with the stand-in result. */
  #park(
    call: ToolCall,
    turnId: string,
    key: string,
    changeSet: ChangeSetQuestion | undefined,
    stale: string | undefined,
  ): ToolVerdict {
    const interruptId = `gate-${uuidv7()}`;
    const message = questionMessage(key, changeSet, stale);
    const extra: Record<string, unknown> = { policy: "require_approval" };
    if (changeSet !== undefined) extra.change_set = changeSet;
    if (stale !== undefined) extra.stale = stale;
    const trace = gateParkSpan({
      tool: call.name,
      interruptId,
      sessionId: this.#deps.sessionId,
      agent: this.#deps.agent,
    });
    if (trace !== undefined) extra.trace = trace;
    const interrupt = this.#rows.interruptRow(turnId, interruptId, call, key, message, extra);
    const detail = stale === undefined ? "parked for operator approval" : `a change-set grant was voided: ${stale}`;
    const audit = this.#rows.auditRow(turnId, "awaiting_approval", interruptId, call, key, { detail });
    return {
      rows: [interrupt, audit],
      permission: "parked",
      result: {
        output: {
          status: "awaiting_operator_approval",
          interrupt_id: interruptId,
          detail: `${message} ${APPROVAL_WAIT}`,
        },
        isError: false,
        endsTurn: true,
      },
      committed: (written) => {
        this.#fold(written);
        this.#deps.audit(this.#rows.record("awaiting_approval", call, key, { interruptId, detail }));
      },
    };
  }

  /** An operator's answer to a parked call: recorded durably before this resolves. */
  answer(interruptId: string, response: unknown, approver: string | undefined): Promise<AnswerOutcome> {
    const run = this.#chain.then(() => this.#answer(interruptId, response, approver));
    this.#chain = run.catch(() => undefined);
    return run;
  }

  async #answer(interruptId: string, response: unknown, approver: string | undefined): Promise<AnswerOutcome> {
    const ledger = await this.ledger();
    const entry = ledger.entry(interruptId);
    if (entry === undefined) return { kind: "unknown" };
    if (entry.resolution !== undefined)
      return { kind: "answered", outcome: entry.resolution.outcome, decidedAt: entry.resolution.decidedAt };
    const { policy, inner } = this.#deps;
    const tool = entry.call.tool;
    const judgement = judgeVerdict(response, entry.call, {
      approver,
      inputSchema: policy.describe(tool).inputSchema,
      schemaProblem: (args) => policy.schemaProblem(tool, args),
      deniedBy: (args) => inner.gate.deniedBy({ callId: entry.call.callId, name: tool, args }),
    });
    if (judgement.kind === "malformed") return judgement;
    const row = this.#rows.verdictRow(entry.call, judgement, approver);
    const rows: AuditEvent[] = [row];
    if (judgement.kind === "resolved" && judgement.mint) {
      const minted = await this.#deps.grants.mint(entry.call, policy.describe(tool).name, approver, judgement.note);
      if (!minted.ok) return this.#refuseChangeSet(entry.call, minted.error, approver);
      rows.push(this.#rows.changeSetApproved(entry.call, minted.value.length, approver), ...minted.value);
    }
    await this.#commit(rows);
    gateVerdictSpan(
      { tool, interruptId, sessionId: this.#deps.sessionId, agent: entry.call.agent, outcome: judgement.outcome },
      entry.call.trace,
    );
    failpoint("svc.gate.after-verdict");
    this.#deps.audit(verdictRecord(this.#deps.sessionId, entry.call, judgement, approver));
    if (judgement.kind === "refused") return { kind: "refused", outcome: judgement.outcome, detail: judgement.detail };
    return { kind: "resolved", outcome: judgement.outcome, ...(judgement.detail ? { detail: judgement.detail } : {}) };
  }

  /** A change-set approval the gate cannot honour: recorded, and the question stays open. */
  async #refuseChangeSet(call: ParkedCall, detail: string, approver: string | undefined): Promise<AnswerOutcome> {
    const judgement = { kind: "refused" as const, outcome: "change_set_scope_refused" as const, detail };
    const row = this.#rows.verdictRow(call, judgement, approver);
    await this.#commit([row]);
    this.#deps.audit(verdictRecord(this.#deps.sessionId, call, judgement, approver));
    return { kind: "refused", outcome: judgement.outcome, detail };
  }

  /**
   * Carry out every answered verdict not carried out yet, before the execution's turn: run the
   * approved calls (intent, call, effect) and tell the model each outcome in a prompt row.
   */
  /** Whether the session runs an execution now (its turn may be calling tools). */
  #executing = false;

  /** The session's executor started or ended an execution. */
  executing(running: boolean): void {
    this.#executing = running;
  }

  /**
   * Carry out answered questions now, outside any execution (POST /resume: the approved call runs
   * before the agent's turns after it); nothing when an execution runs, which carries them out.
   */
  async settleNow(): Promise<void> {
    if (this.#executing) return;
    const run = this.#chain.then(() =>
      this.#executing ? 0 : this.#settle("gate-resume", this.#deps.history(), new AbortController().signal),
    );
    this.#chain = run.catch(() => undefined);
    await run;
  }

  /**
   * An operator acknowledges the calls whose effect is unknown: a durable row that covers the
   * calls persisted up to now (a later cut call is ambiguous again). Resolves with how many.
   */
  acknowledge(reason: string, by: string): Promise<number> {
    const run = this.#chain.then(async () => {
      const dangling = (await this.ledger()).ambiguous();
      if (dangling.length === 0) return 0;
      await this.#commit([
        this.#rows.ackRow(
          dangling.map((entry) => entry.call.interruptId),
          reason,
          by,
        ),
      ]);
      return dangling.length;
    });
    this.#chain = run.catch(() => undefined);
    return run;
  }

  /** The agent's model turn is starting: it reads every outcome told so far. */
  async modelTurnStarting(): Promise<void> {
    (await this.ledger()).markTold();
  }

  /** Whether outcomes were told that the agent's model has not read yet. */
  async behind(): Promise<boolean> {
    return (await this.ledger()).behind;
  }

  settle(invocationId: string, history: ChatMessage[], signal: AbortSignal): Promise<number> {
    const run = this.#chain.then(() => this.#settle(invocationId, history, signal));
    this.#chain = run.catch(() => undefined);
    return run;
  }

  /** Resolves with the number of outcomes the model was told. */
  async #settle(invocationId: string, history: ChatMessage[], signal: AbortSignal): Promise<number> {
    const ledger = await this.ledger();
    let told = 0;
    if (ledger.unsettled().some((entry) => entry.resolution?.runArgs !== undefined)) await this.#deps.prepareTools();
    for (const entry of ledger.unsettled()) {
      if (signal.aborted) return told;
      const result = await this.#carryOut(entry, invocationId, signal);
      const journal = this.#deps.journal;
      const effect = this.#rows.effectRow(invocationId, entry.call.interruptId, result);
      const notice: UserMessageEvent = {
        ...journal.header(invocationId, GATE_AUTHOR),
        kind: "user-message",
        text: `GATE ${JSON.stringify(gateNotice(entry, result))}`,
        promptIds: [],
      };
      await this.#commit([effect, notice]);
      history.push({ role: "user", text: notice.text });
      told++;
    }
    return told;
  }

  /** Run an approved call once: its intent is committed first; a refused one is not run. */
  async #carryOut(
    entry: GateEntry,
    invocationId: string,
    signal: AbortSignal,
  ): Promise<ToolRunResult & { ran: boolean }> {
    const runArgs = entry.resolution?.runArgs;
    if (runArgs === undefined) return { ...refusalOutput(entry), ran: false };
    const call: ToolCall = { callId: entry.call.callId, name: entry.call.tool, args: runArgs };
    const result = await this.#runOnce(call, entry.call.interruptId, entry.call.interruptId, invocationId, signal);
    return { ...result, ran: true };
  }

  /** The intent row committed, then the call with its idempotency key in `_meta`. */
  async #runOnce(
    call: ToolCall,
    interruptId: string,
    idempotencyKey: string,
    invocationId: string,
    signal: AbortSignal,
  ): Promise<ToolRunResult> {
    await this.#commit([this.#rows.intentRow(invocationId, interruptId, idempotencyKey, call)]);
    const result = await this.#deps.runner.run(call, signal, { meta: { idempotency_key: idempotencyKey } });
    failpoint("svc.gate.after-call");
    return result;
  }

  /** Fold rows this gate committed into the ledger (when it is loaded; else the fold reads them). */
  #fold(rows: readonly CommittedRow[]): void {
    void this.#ledger?.then((ledger) => {
      for (const row of rows) ledger.apply(row);
    });
  }

  /** Commit rows and fold them. */
  async #commit(rows: SessionEvent[]): Promise<void> {
    this.#fold(await this.#deps.journal.append(rows));
  }
}
