/**
 * WriteGate: svc's write gate in front of one session's tools (spec: States and transitions).
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
  AUDIT_ROW,
  type AuditOutcome,
  EFFECT_ROW,
  GATE_AUTHOR,
  type GateEntry,
  GateLedger,
  type Grant,
  INTENT_ROW,
  INTERRUPT_ROW,
  type ParkedCall,
} from "./gate-ledger.ts";
import { type Judgement, judgeVerdict } from "./verdict.ts";

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
const REJECTED =
  "The operator rejected this call. Do not retry it, and do not try to reach the same change by another route.";

export class WriteGate implements TurnTools {
  readonly #deps: WriteGateDeps;
  #ledger: Promise<GateLedger> | undefined;
  /** Answers and settles one at a time: two answers to one question cannot both resolve it. */
  #chain: Promise<unknown> = Promise.resolve();

  constructor(deps: WriteGateDeps) {
    this.#deps = deps;
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
      this.#deps.audit(this.#record("denied_by_policy", call, key, { detail }));
      return { result: { output: { error: "denied_by_policy", detail }, isError: true } };
    }
    if (policy.onMutation === "apply") {
      this.#deps.audit(
        this.#record("apply", call, key, { detail: "applied without approval (hitl.on_mutation apply)" }),
      );
      return inner.run(call, turnId);
    }
    if (policy.onMutation === "dry_run") {
      this.#deps.audit(this.#record("dry_run", call, key, {}));
      const detail = "hitl.on_mutation is dry_run: the call was not made";
      return {
        result: { output: { status: "dry_run", tool: described.name, args: call.args, detail }, isError: false },
      };
    }
    return this.#gateCall(call, turnId, key, described.name, ledger);
  }

  /** A mutating call under `require_approval`: fired on a grant that still covers it, else parked. */
  async #gateCall(call: ToolCall, turnId: string, key: string, tool: string, ledger: GateLedger): Promise<ToolVerdict> {
    const grants = this.#deps.grants;
    const check = await grants.check(ledger, tool, call.args, turnId);
    if (check.kind === "covered") return this.#fireGrant(call, turnId, key, check.grant);
    if (check.kind === "stale" && check.void !== undefined) {
      await this.#deps.journal.append([check.void]);
      this.#foldCommitted([check.void]);
    }
    const question = await grants.question(tool, call.args);
    return this.#park(call, turnId, key, question, check.kind === "stale" ? check.reason : undefined);
  }

  /** Run a call a change-set grant covers, at most once: rows answering it, intent, call, effect. */
  async #fireGrant(call: ToolCall, turnId: string, key: string, grant: Grant): Promise<ToolVerdict> {
    const journal = this.#deps.journal;
    const interruptId = `gate-${uuidv7()}`;
    const message = `authorized by the change-set grant ${grant.grantId}`;
    const interrupt = this.#interruptRow(turnId, interruptId, call, key, message, { grant_id: grant.grantId });
    const extra: Record<string, unknown> = {
      run_args: call.args,
      scope: "change_set",
      authority: "change_set_grant",
      change_set: grant.source,
      detail: "authorized by an approved change set",
    };
    if (grant.approver !== undefined) extra.approver = grant.approver;
    if (grant.note !== undefined) extra.note = grant.note;
    const decided = this.#auditRow(turnId, "approved_by_change_set", interruptId, call, key, extra);
    await journal.append([interrupt, decided]);
    this.#foldCommitted([interrupt, decided]);
    this.#deps.audit(
      this.#record("approved_by_change_set", call, key, { interruptId, detail: `change-set grant ${grant.grantId}` }),
    );
    const result = await this.#runOnce(call, interruptId, grant.grantId, turnId, new AbortController().signal);
    const effect = this.#effectRow(turnId, interruptId, { ...result, ran: true });
    await journal.append([effect]);
    this.#foldCommitted([effect]);
    return { result };
  }

  /** A report (finish_task): its proposed change set, checked, is committed with it. */
  report(call: ToolCall, turnId: string): ToolVerdict {
    const proposed = this.#deps.grants.propose(call, turnId);
    if (!proposed.ok) {
      this.#deps.audit(this.#record("change_set_refused", call, call.name, { detail: proposed.error }));
      return { result: { output: { error: "invalid_proposed_change", detail: proposed.error }, isError: true } };
    }
    const finished: ToolVerdict = { result: { output: { status: "finished" }, isError: false, endsTurn: true } };
    const row = proposed.value;
    return row === undefined ? finished : { ...finished, rows: [row], committed: () => this.#foldCommitted([row]) };
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
    const interrupt = this.#interruptRow(turnId, interruptId, call, key, message, extra);
    const detail = stale === undefined ? "parked for operator approval" : `a change-set grant was voided: ${stale}`;
    const audit = this.#auditRow(turnId, "awaiting_approval", interruptId, call, key, { detail });
    return {
      rows: [interrupt, audit],
      result: {
        output: {
          status: "awaiting_operator_approval",
          interrupt_id: interruptId,
          detail: `${message} ${APPROVAL_WAIT}`,
        },
        isError: false,
        endsTurn: true,
      },
      committed: () => {
        this.#foldCommitted([interrupt, audit]);
        this.#deps.audit(this.#record("awaiting_approval", call, key, { interruptId, detail }));
      },
    };
  }

  #interruptRow(
    turnId: string,
    interruptId: string,
    call: ToolCall,
    key: string,
    message: string,
    extra: Record<string, unknown>,
  ): AuditEvent {
    return {
      ...this.#deps.journal.header(turnId, GATE_AUTHOR),
      kind: "audit",
      name: INTERRUPT_ROW,
      metadata: {
        interrupt_id: interruptId,
        call_id: call.callId,
        tool: call.name,
        args: call.args,
        key,
        agent: this.#deps.agent,
        message,
        ...extra,
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
    const row = this.#verdictRow(entry.call, judgement, approver);
    const rows: AuditEvent[] = [row];
    if (judgement.kind === "resolved" && judgement.mint) {
      const minted = await this.#deps.grants.mint(entry.call, policy.describe(tool).name, approver, judgement.note);
      if (!minted.ok) return this.#refuseChangeSet(entry.call, minted.error, approver);
      rows.push(this.#changeSetApproved(entry.call, minted.value.length, approver), ...minted.value);
    }
    await this.#deps.journal.append(rows);
    this.#foldCommitted(rows);
    failpoint("svc.gate.after-verdict");
    this.#deps.audit(verdictRecord(this.#deps.sessionId, entry.call, judgement, approver));
    if (judgement.kind === "refused") return { kind: "refused", outcome: judgement.outcome, detail: judgement.detail };
    return { kind: "resolved", outcome: judgement.outcome, ...(judgement.detail ? { detail: judgement.detail } : {}) };
  }

  /** A change-set approval the gate cannot honour: recorded, and the question stays open. */
  async #refuseChangeSet(call: ParkedCall, detail: string, approver: string | undefined): Promise<AnswerOutcome> {
    const judgement = { kind: "refused" as const, outcome: "change_set_scope_refused" as const, detail };
    const row = this.#verdictRow(call, judgement, approver);
    await this.#deps.journal.append([row]);
    this.#deps.audit(verdictRecord(this.#deps.sessionId, call, judgement, approver));
    return { kind: "refused", outcome: judgement.outcome, detail };
  }

  #changeSetApproved(call: ParkedCall, grants: number, approver: string | undefined): AuditEvent {
    const metadata: Record<string, unknown> = {
      interrupt_id: call.interruptId,
      outcome: "change_set_approved",
      call_id: call.callId,
      tool: call.tool,
      key: call.key,
      agent: call.agent,
      grants,
      detail: `${grants} change-set grant(s) minted`,
    };
    if (approver !== undefined) metadata.approver = approver;
    return { ...this.#deps.journal.header("gate-verdict", GATE_AUTHOR), kind: "audit", name: AUDIT_ROW, metadata };
  }

  /**
   * Carry out every answered verdict not carried out yet, before the execution's turn: run the
   * approved calls (intent, call, effect) and tell the model each outcome in a prompt row.
   */
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
      const effect = this.#effectRow(invocationId, entry.call.interruptId, result);
      const notice: UserMessageEvent = {
        ...journal.header(invocationId, GATE_AUTHOR),
        kind: "user-message",
        text: `GATE ${JSON.stringify(gateNotice(entry, result))}`,
        promptIds: [],
      };
      await journal.append([effect, notice]);
      this.#foldCommitted([effect]);
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
    const journal = this.#deps.journal;
    const intent: AuditEvent = {
      ...journal.header(invocationId, GATE_AUTHOR),
      kind: "audit",
      name: INTENT_ROW,
      metadata: { interrupt_id: interruptId, idempotency_key: idempotencyKey, tool: call.name, args: call.args },
    };
    await journal.append([intent]);
    this.#foldCommitted([intent]);
    const result = await this.#deps.runner.run(call, signal, { meta: { idempotency_key: idempotencyKey } });
    failpoint("svc.gate.after-call");
    return result;
  }

  #effectRow(invocationId: string, interruptId: string, result: ToolRunResult & { ran: boolean }): AuditEvent {
    return {
      ...this.#deps.journal.header(invocationId, GATE_AUTHOR),
      kind: "audit",
      name: EFFECT_ROW,
      metadata: { interrupt_id: interruptId, ran: result.ran, output: result.output, is_error: result.isError },
    };
  }

  #foldCommitted(rows: readonly SessionEvent[]): void {
    // Rows this process committed are newer than any acknowledgement read from the log.
    void this.#ledger?.then((ledger) => {
      for (const event of rows) ledger.apply({ seq: Number.MAX_SAFE_INTEGER, event });
    });
  }

  #verdictRow(
    call: ParkedCall,
    judgement: Exclude<Judgement, { kind: "malformed" }>,
    approver: string | undefined,
  ): AuditEvent {
    const metadata: Record<string, unknown> = {
      interrupt_id: call.interruptId,
      outcome: judgement.outcome,
      call_id: call.callId,
      tool: call.tool,
      key: call.key,
      args: call.args,
      agent: call.agent,
    };
    if (approver !== undefined) metadata.approver = approver;
    if (judgement.detail !== undefined) metadata.detail = judgement.detail;
    if (judgement.kind === "resolved") {
      metadata.verdict = judgement.verdict;
      if (judgement.scope !== undefined) metadata.scope = judgement.scope;
      if (judgement.note !== undefined) metadata.note = judgement.note;
      if (judgement.runArgs !== undefined) metadata.run_args = judgement.runArgs;
      if (judgement.verdict === "edit" && judgement.runArgs !== undefined)
        metadata.executed_key = callKey(this.#deps.policy.describe(call.tool).name, judgement.runArgs);
    }
    return { ...this.#deps.journal.header("gate-verdict", GATE_AUTHOR), kind: "audit", name: AUDIT_ROW, metadata };
  }

  #auditRow(
    turnId: string,
    outcome: AuditOutcome,
    interruptId: string,
    call: ToolCall,
    key: string,
    extra: Record<string, unknown>,
  ): AuditEvent {
    return {
      ...this.#deps.journal.header(turnId, GATE_AUTHOR),
      kind: "audit",
      name: AUDIT_ROW,
      metadata: {
        interrupt_id: interruptId,
        outcome,
        call_id: call.callId,
        tool: call.name,
        key,
        agent: this.#deps.agent,
        ...extra,
      },
    };
  }

  #record(
    outcome: AuditOutcome,
    call: ToolCall,
    key: string,
    extra: { interruptId?: string; detail?: string },
  ): AuditRecord {
    return {
      outcome,
      tool: call.name,
      call: key,
      agent: this.#deps.agent,
      session: this.#deps.sessionId,
      function_call_id: call.callId,
      ...(extra.interruptId === undefined ? {} : { interrupt_id: extra.interruptId }),
      ...(extra.detail === undefined ? {} : { detail: extra.detail }),
    };
  }
}

function verdictRecord(
  sessionId: string,
  call: ParkedCall,
  judgement: Exclude<Judgement, { kind: "malformed" }>,
  approver: string | undefined,
): AuditRecord {
  return {
    outcome: judgement.outcome,
    tool: call.tool,
    call: call.key,
    agent: call.agent,
    session: sessionId,
    function_call_id: call.callId,
    interrupt_id: call.interruptId,
    ...(judgement.detail === undefined ? {} : { detail: judgement.detail }),
    ...(approver === undefined ? {} : { approver }),
    ...(judgement.kind === "resolved" && judgement.note !== undefined ? { note: judgement.note } : {}),
  };
}

/** What the model reads for a call the operator (or the gate, judging the answer) refused. */
function refusalOutput(entry: GateEntry): ToolRunResult {
  const resolution = entry.resolution;
  const output: Record<string, unknown> = {
    error: resolution?.outcome ?? "denied_by_operator",
    detail: resolution?.outcome === "denied_by_operator" ? REJECTED : `${resolution?.detail ?? "refused"}. ${REJECTED}`,
  };
  if (resolution?.note !== undefined) output.operator_note = resolution.note;
  if (resolution?.approver !== undefined) output.approver = resolution.approver;
  return { output, isError: true };
}

/** The prompt line telling the model what became of a parked call. */
function gateNotice(entry: GateEntry, result: ToolRunResult & { ran: boolean }): Record<string, unknown> {
  const resolution = entry.resolution;
  const notice: Record<string, unknown> = {
    interrupt_id: entry.call.interruptId,
    call_id: entry.call.callId,
    call: entry.call.key,
    verdict: resolution?.outcome,
  };
  if (result.ran) {
    notice.detail =
      resolution?.outcome === "edit_applied"
        ? "the operator edited the call's arguments; the edited call ran once"
        : "the operator approved the call; it ran once";
    if (resolution?.runArgs !== undefined) notice.args = resolution.runArgs;
    if (resolution?.note !== undefined) notice.operator_note = resolution.note;
  }
  notice.result = result.output;
  notice.is_error = result.isError;
  return notice;
}

function ambiguousRefusal(dangling: readonly GateEntry[]): ToolRunResult {
  return {
    output: {
      error: "ambiguous_prior_effect",
      detail:
        "an earlier approved call was cut off while it ran, so whether it took effect is unknown: mutating calls are refused until an operator acknowledges it (ack-effects) or aborts the session; read-only work may go on",
      dangling_calls: dangling.map(
        (entry) =>
          `${entry.call.tool} (call ${entry.call.callId}, interrupt ${entry.call.interruptId}, ${entry.call.parkedAt})`,
      ),
    },
    isError: true,
  };
}
