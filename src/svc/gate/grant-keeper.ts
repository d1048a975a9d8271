/**
 * GrantKeeper: the change-set half of the write gate (docs/svc.md#change-sets). It builds the
 * change-set part of a question (is the call one of a set a specialist proposed; can the set be
 * granted as a whole), mints one grant per other call of the set when an operator approves with
 * `scope: change_set` (each with its precondition read at approval), and decides whether a grant
 * still covers a call about to park: unspent, unexpired (`hitl.change_set_ttl`), its precondition
 * unchanged. A grant that stops covering its call is voided for good and the call asks again with
 * the `Stale:` reason. Rows are built here; the gate commits them.
 */
import type { AuditEvent, ToolCall } from "../../core/events.ts";
import { uuidv7 } from "../../core/ids.ts";
import { type Result, err, ok } from "../../core/result.ts";
import type { Journal } from "../../runtime/session-journal.ts";
import type { Precondition } from "../workload/workload.ts";
import {
  type ChangeSet,
  type ChangeSetQuestion,
  STALE,
  changeSignature,
  parseProposedChange,
  unrenderable,
} from "./change-set.ts";
import {
  CHANGE_SET_ROW,
  GATE_AUTHOR,
  GRANT_ROW,
  GRANT_VOID_ROW,
  type Grant,
  type GateLedger,
  type ParkedCall,
} from "./gate-ledger.ts";
import { type PreconditionRead, type Snapshot, describePrecondition, moved, takeSnapshot } from "./precondition.ts";

export interface GrantKeeperDeps {
  journal: Journal;
  specialist: string;
  /** The change sets this session's workload specialists proposed for the same incident. */
  changeSets(): Promise<ChangeSet[]>;
  /** The precondition a tool (by its own name) declares. */
  preconditionOf(tool: string): Precondition | undefined;
  readPrecondition: PreconditionRead;
  /** Why these arguments are not a call the workload's tool (own name) accepts; undefined when they are. */
  checkProposed(tool: string, args: Record<string, unknown>): string | undefined;
  ttlMs: number;
  now(): Date;
}

/** How a grant stands for a call about to park. */
export type GrantCheck =
  | { kind: "none" }
  | { kind: "covered"; grant: Grant }
  /** The call asks again: `void` is the row voiding the grant that stopped covering it, if one did. */
  | { kind: "stale"; reason: string; void?: AuditEvent };

export class GrantKeeper {
  readonly #deps: GrantKeeperDeps;

  constructor(deps: GrantKeeperDeps) {
    this.#deps = deps;
  }

  /** Whether a grant covers this call (tool by its own name). */
  async check(ledger: GateLedger, tool: string, args: Record<string, unknown>, turnId: string): Promise<GrantCheck> {
    const grants = ledger.grantsFor(changeSignature(tool, args));
    const live = grants.find((grant) => !grant.spent && grant.voided === undefined);
    if (live === undefined) {
      const last = grants.at(-1);
      if (last === undefined) return { kind: "none" };
      return { kind: "stale", reason: last.voided === undefined ? STALE.spent : STALE.voided(last.voided) };
    }
    const reason = await this.#staleness(live, tool, args);
    if (reason === undefined) return { kind: "covered", grant: live };
    const voidRow: AuditEvent = {
      ...this.#deps.journal.header(turnId, GATE_AUTHOR),
      kind: "audit",
      name: GRANT_VOID_ROW,
      metadata: { grant_id: live.grantId, reason },
    };
    return { kind: "stale", reason, void: voidRow };
  }

  async #staleness(grant: Grant, tool: string, args: Record<string, unknown>): Promise<string | undefined> {
    const now = this.#deps.now();
    if (now.getTime() > Date.parse(grant.expiresAt))
      return STALE.expired(new Date(grant.approvedAt), new Date(grant.expiresAt));
    const precondition = this.#deps.preconditionOf(tool);
    if (precondition === undefined || grant.snapshot === undefined) return undefined;
    const current = await takeSnapshot(precondition, args, this.#deps.readPrecondition);
    if (!current.ok) return current.error;
    return moved(grant.snapshot, current.value);
  }

  /** The change-set part of a question about this call, when a specialist proposed it in a set. */
  async question(tool: string, args: Record<string, unknown>): Promise<ChangeSetQuestion | undefined> {
    const signature = changeSignature(tool, args);
    const set = (await this.#deps.changeSets()).find((candidate) =>
      candidate.changes.some((change) => changeSignature(change.tool, change.arguments) === signature),
    );
    if (set === undefined) return undefined;
    const preconditions: Record<string, string> = {};
    let ungrantable = unrenderable(set.changes);
    for (const change of set.changes) {
      const precondition = this.#deps.preconditionOf(change.tool);
      preconditions[change.tool] ??= describePrecondition(precondition);
      if (precondition === undefined) continue;
      const read = await takeSnapshot(precondition, change.arguments, this.#deps.readPrecondition);
      if (!read.ok) {
        preconditions[change.tool] = `declared but unreadable: ${read.error}`;
        ungrantable ??= `the freshness check of ${change.tool} cannot be evaluated (${read.error})`;
      }
    }
    return {
      specialist: set.specialist,
      changes: set.changes,
      grantable: ungrantable === undefined,
      ...(ungrantable === undefined ? {} : { ungrantable }),
      ttl_seconds: Math.round(this.#deps.ttlMs / 1000),
      preconditions,
    };
  }

  /**
   * The grant rows of an approval with `scope: change_set`: one per other call of the set, each
   * with its precondition read now. An error (a read that fails) refuses the whole verdict.
   */
  async mint(
    call: ParkedCall,
    tool: string,
    approver: string | undefined,
    note: string | undefined,
  ): Promise<Result<AuditEvent[], string>> {
    const set = call.changeSet;
    if (set === undefined) return err("this question carries no change set");
    const others = [...set.changes];
    const own = others.findIndex(
      (change) => changeSignature(change.tool, change.arguments) === changeSignature(tool, call.args),
    );
    if (own >= 0) others.splice(own, 1);
    const now = this.#deps.now();
    const rows: AuditEvent[] = [];
    for (const change of others) {
      const precondition = this.#deps.preconditionOf(change.tool);
      let snapshot: Snapshot | undefined;
      if (precondition !== undefined) {
        const read = await takeSnapshot(precondition, change.arguments, this.#deps.readPrecondition);
        if (!read.ok) return err(`the freshness check of ${change.tool} cannot be evaluated: ${read.error}`);
        snapshot = read.value;
      }
      const metadata: Record<string, unknown> = {
        grant_id: `grant-${uuidv7()}`,
        signature: changeSignature(change.tool, change.arguments),
        tool: change.tool,
        args: change.arguments,
        approved_at: now.toISOString(),
        expires_at: new Date(now.getTime() + this.#deps.ttlMs).toISOString(),
        source: call.key,
      };
      if (snapshot !== undefined) metadata.snapshot = snapshot;
      if (approver !== undefined) metadata.approver = approver;
      if (note !== undefined) metadata.note = note;
      rows.push({
        ...this.#deps.journal.header("gate-verdict", GATE_AUTHOR),
        kind: "audit",
        name: GRANT_ROW,
        metadata,
      });
    }
    return ok(rows);
  }

  /**
   * A report's `proposed_change` (finish_task): the change-set row to commit with the report, or
   * the detail the model is told (`invalid_proposed_change`).
   */
  propose(call: ToolCall, turnId: string): Result<AuditEvent | undefined, string> {
    const raw = call.args.proposed_change;
    if (raw === undefined) return ok(undefined);
    const changes = parseProposedChange(raw, (tool, args) => this.#deps.checkProposed(tool, args));
    if (!changes.ok) return changes;
    return ok({
      ...this.#deps.journal.header(turnId, GATE_AUTHOR),
      kind: "audit",
      name: CHANGE_SET_ROW,
      metadata: { specialist: this.#deps.specialist, changes: changes.value },
    });
  }
}
