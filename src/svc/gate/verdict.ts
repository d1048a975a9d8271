/**
 * Judging an operator's answer to a parked call (docs/svc.md#the-write-gate, the verdict table and
 * its edit checks; docs/svc.md#session-states): the payload's shape, the scope (`once` or `change_set`,
 * nothing wider; `change_set` only for a call its change set covers), and for an edit the four checks (an
 * attributable approver, every argument declared by the tool, values that satisfy its input
 * schema, the edited call passing the deny policy under its own key). Pure: what the call's tool
 * declares and what the policy says come in as functions.
 */
import * as v from "valibot";
import type { AuditOutcome, ParkedCall } from "./gate-ledger.ts";

/** POST /resume's `response` for a write-gate question. `approver` is never taken from it. */
export const VerdictPayload = v.looseObject({
  verdict: v.optional(v.string(), ""),
  scope: v.optional(v.string()),
  args: v.optional(v.unknown()),
  note: v.optional(v.string()),
});

/** What the gate needs to know about the call's tool and policy to judge an edit. */
export interface VerdictContext {
  /** The authenticated caller's identity; undefined when the listener runs without a token. */
  approver: string | undefined;
  /** The tool's declared input schema; undefined: it declares none, so it cannot be edited. */
  inputSchema: Record<string, unknown> | undefined;
  /** Why these arguments break the input schema; undefined when they satisfy it. */
  schemaProblem(args: Record<string, unknown>): string | undefined;
  /** The deny pattern these arguments match under the call's tool; undefined when none does. */
  deniedBy(args: Record<string, unknown>): string | undefined;
}

export type Judgement =
  /** Not a verdict at all: nothing is recorded against the question, which stays open. */
  | { kind: "malformed"; detail: string }
  /** A refused verdict that leaves the question open: the operator re-issues it. */
  | { kind: "refused"; outcome: "approval_scope_refused" | "change_set_scope_refused"; detail: string }
  /** The question is answered: the call runs with `runArgs`, or never (a refusal the model is told). */
  | {
      kind: "resolved";
      verdict: "approve" | "reject" | "edit";
      scope?: string;
      outcome: AuditOutcome;
      runArgs?: Record<string, unknown>;
      detail?: string;
      note?: string;
      /** Approved for the whole change set: mint a grant for each of its other calls. */
      mint?: true;
    };

const VERDICTS = ["approve", "reject", "edit"] as const;

export function judgeVerdict(response: unknown, call: ParkedCall, context: VerdictContext): Judgement {
  const parsed = v.safeParse(VerdictPayload, response);
  if (!parsed.success) {
    return {
      kind: "malformed",
      detail: `response must be an object {verdict, scope?, args?, note?}: ${parsed.issues[0]?.message ?? "invalid"}`,
    };
  }
  const payload = parsed.output;
  const verdict = VERDICTS.find((name) => name === payload.verdict);
  if (verdict === undefined)
    return {
      kind: "malformed",
      detail: `unknown verdict ${JSON.stringify(payload.verdict)} (want approve, reject, or edit)`,
    };
  const scope = payload.scope;
  if (scope !== undefined && scope !== "once" && scope !== "change_set") {
    return {
      kind: "refused",
      outcome: "approval_scope_refused",
      detail: `scope ${JSON.stringify(scope)} is wider than one call or a change set and is refused, not narrowed: re-issue the verdict for this single call (scope once)`,
    };
  }
  const set = call.changeSet;
  const refusal = scope === "change_set" ? changeSetRefusal(verdict, set) : undefined;
  if (refusal !== undefined) return { kind: "refused", outcome: "change_set_scope_refused", detail: refusal };
  const base = { kind: "resolved" as const, verdict, ...(scope === undefined ? {} : { scope }) };
  const note = payload.note === undefined ? {} : { note: payload.note };
  if (verdict === "approve") {
    const mint = scope === "change_set" ? { mint: true as const } : {};
    return { ...base, ...note, ...mint, outcome: "apply", runArgs: call.args };
  }
  if (verdict === "reject") return { ...base, ...note, outcome: "denied_by_operator" };
  return { ...base, ...note, ...judgeEdit(payload.args, call, context) };
}

/** Why `scope: change_set` cannot be honoured for this answer; undefined when it can. */
function changeSetRefusal(verdict: string, set: ParkedCall["changeSet"]): string | undefined {
  if (verdict === "edit") return "an edit cannot be approved for a change set: answer this call alone (scope once)";
  if (set === undefined) return "this question carries no change set: answer this call alone (scope once)";
  if (!set.grantable)
    return `this change set must be approved one call at a time: ${set.ungrantable ?? "not grantable"}`;
  return undefined;
}

/** The four edit checks, in order; the first that fails refuses the call outright. */
function judgeEdit(
  args: unknown,
  call: ParkedCall,
  context: VerdictContext,
): { outcome: AuditOutcome; runArgs?: Record<string, unknown>; detail?: string } {
  if (context.approver === undefined) {
    return {
      outcome: "edit_unattributed",
      detail:
        "an edit needs an authenticated approver (set SVC_INJECT_TOKEN): neither the edited nor the proposed call runs",
    };
  }
  if (args === null || typeof args !== "object" || Array.isArray(args))
    return { outcome: "edit_refused", detail: "an edit carries the arguments to run as an object in args" };
  const edited = args as Record<string, unknown>;
  const declared = declaredProperties(context.inputSchema);
  if (declared === undefined)
    return { outcome: "edit_refused", detail: `${call.tool} declares no input schema, so its calls cannot be edited` };
  const undeclared = Object.keys(edited).filter((name) => !declared.has(name));
  if (undeclared.length > 0)
    return {
      outcome: "edit_refused",
      detail: `${call.tool} declares no argument ${undeclared.map((name) => JSON.stringify(name)).join(", ")}`,
    };
  const problem = context.schemaProblem(edited);
  if (problem !== undefined)
    return { outcome: "edit_refused", detail: `the edited arguments break ${call.tool}'s input schema: ${problem}` };
  const pattern = context.deniedBy(edited);
  if (pattern !== undefined)
    return {
      outcome: "denied_by_policy",
      detail: `the edited call matches the deny pattern ${JSON.stringify(pattern)} (checked under its own key)`,
    };
  return { outcome: "edit_applied", runArgs: edited };
}

function declaredProperties(schema: Record<string, unknown> | undefined): Set<string> | undefined {
  const properties = schema?.properties;
  if (properties === null || typeof properties !== "object" || Array.isArray(properties)) return undefined;
  return new Set(Object.keys(properties));
}
