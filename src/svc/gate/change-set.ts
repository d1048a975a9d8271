/**
 * Change sets (docs/svc.md#change-sets): the mutating calls one specialist
 * proposed together in its report (`finish_task`'s `proposed_change`), checked when the report is
 * made; the change-set part of a question about one of those calls (whether the set can be granted
 * as a whole, and why not); and the exact wording of the questions and of a stale grant. Pure.
 */
import { canonicalJson } from "../../core/permission-policy.ts";
import { type Result, err, ok } from "../../core/result.ts";
import { KEY_VALUE_LIMIT, renderValue } from "./call-key.ts";

/** One proposed call: the tool's own name (as the workload declares it) and its arguments. */
export interface ProposedChange {
  tool: string;
  arguments: Record<string, unknown>;
}

/** A specialist's recorded change set. */
export interface ChangeSet {
  specialist: string;
  changes: ProposedChange[];
}

/** What a question about a call of a change set carries (docs/svc.md#questions). */
export interface ChangeSetQuestion {
  specialist: string;
  changes: ProposedChange[];
  grantable: boolean;
  ungrantable?: string;
  ttl_seconds: number;
  /** Per tool of the set: how its freshness is checked before a granted call fires. */
  preconditions: Record<string, string>;
}

/** The signature a grant authorizes: `tool(<args as JSON, keys sorted>)`. */
export function changeSignature(tool: string, args: Readonly<Record<string, unknown>>): string {
  return `${tool}(${canonicalJson(args)})`;
}

/**
 * Check a report's `proposed_change`: a list of `{tool, arguments}` (arguments an object or a JSON
 * object encoded as a string), each naming a tool the workload declares, with arguments its input
 * schema accepts. The error is the detail the model is told (`invalid_proposed_change`).
 */
export function parseProposedChange(
  raw: unknown,
  check: (tool: string, args: Record<string, unknown>) => string | undefined,
): Result<ProposedChange[], string> {
  if (!Array.isArray(raw) || raw.length === 0)
    return err("proposed_change must be a non-empty list of {tool, arguments}");
  const changes: ProposedChange[] = [];
  for (const [index, entry] of raw.entries()) {
    if (entry === null || typeof entry !== "object" || typeof (entry as { tool?: unknown }).tool !== "string")
      return err(`proposed_change[${index}] must be an object with a tool name`);
    const { tool, arguments: given } = entry as { tool: string; arguments?: unknown };
    const args = argumentsObject(given);
    if (args === undefined)
      return err(`proposed_change[${index}].arguments must be a JSON object (or one encoded as a string)`);
    const problem = check(tool, args);
    if (problem !== undefined) return err(`proposed_change[${index}] (${tool}): ${problem}`);
    changes.push({ tool, arguments: args });
  }
  return ok(changes);
}

function argumentsObject(given: unknown): Record<string, unknown> | undefined {
  let value = given ?? {};
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Why the set cannot be granted as a whole because of its arguments (a value too long to show). */
export function unrenderable(changes: readonly ProposedChange[]): string | undefined {
  for (const change of changes) {
    for (const [name, value] of Object.entries(change.arguments)) {
      if (renderValue(value).length > KEY_VALUE_LIMIT)
        return `the argument ${name} of ${change.tool} is longer than ${KEY_VALUE_LIMIT} characters when shown, so an approval of the whole set could not show what it authorizes`;
    }
  }
  return undefined;
}

export function questionMessage(key: string, set: ChangeSetQuestion | undefined, stale: string | undefined): string {
  const base = `Approve mutating call ${key}?`;
  if (stale !== undefined)
    return `${base} (you approved this as part of a change set, and svc is asking again: ${stale})`;
  if (set === undefined) return base;
  const count = set.changes.length;
  return set.grantable
    ? `${base} It is one of ${count} calls in the change set ${set.specialist} proposed; answer with scope=change_set to authorize all ${count}.`
    : `${base} It is 1 of ${count} calls ${set.specialist} proposed, but they must be approved one at a time: ${set.ungrantable ?? "not grantable"}`;
}

/** HH:MM:SSZ of an instant, as stale reasons show it. */
export function clockTime(at: Date): string {
  return `${at.toISOString().slice(11, 19)}Z`;
}

export const STALE = {
  expired: (approvedAt: Date, expiredAt: Date) =>
    `the change set was approved at ${clockTime(approvedAt)} and that approval expired at ${clockTime(expiredAt)}`,
  moved: (changes: readonly { field: string; old: unknown; now: unknown }[], readKey: string) =>
    `the cluster moved since this was approved: ${changes
      .map(
        (change) =>
          `${change.field} was ${JSON.stringify(change.old)} at approval and is ${JSON.stringify(change.now)} now`,
      )
      .join("; ")} (precondition read ${readKey})`,
  digestMoved: (readKey: string) =>
    `the precondition read ${readKey} no longer returns what it returned at approval time`,
  readFailed: (readKey: string, error: string) =>
    `the precondition read ${readKey} failed (${error}), so svc cannot confirm the cluster still matches what was approved`,
  spent:
    "this call was already approved once and has already been made; a second identical call needs its own approval",
  voided: (reason: string) => `an earlier approval of this call is no longer valid: ${reason}`,
};
