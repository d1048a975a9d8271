/**
 * Preconditions of granted calls (docs/svc.md#change-sets): the read a tool
 * declares (`precondition: {read, args, args_from, fields}`) is run when a change set is approved
 * and again just before a granted call fires; the declared fields (dotted paths into
 * `{output: <the read's result>}`), or a digest of the whole result when none are declared, must be
 * unchanged. Pure except for the read itself, which the caller supplies.
 */
import { createHash } from "node:crypto";
import { canonicalJson } from "../../core/permission-policy.ts";
import { type Result, err, ok } from "../../core/result.ts";
import type { Precondition } from "../workload/workload.ts";
import { callKey } from "./call-key.ts";
import { STALE } from "./change-set.ts";

/** Runs a read-only tool by its own name; answers its result (structured, else parsed, else text) or why not. */
export type PreconditionRead = (tool: string, args: Record<string, unknown>) => Promise<Result<unknown, string>>;

/** What a precondition read returned at one moment. */
export interface Snapshot {
  readKey: string;
  /** The declared fields' values; absent when the whole result is digested. */
  fields?: Record<string, unknown>;
  digest?: string;
}

export function describePrecondition(precondition: Precondition | undefined): string {
  return precondition === undefined
    ? "none declared — this approval is bounded by time alone"
    : `re-checked against ${precondition.read} before the call fires`;
}

/** Read the precondition for a call with `changeArgs` now. */
export async function takeSnapshot(
  precondition: Precondition,
  changeArgs: Readonly<Record<string, unknown>>,
  read: PreconditionRead,
): Promise<Result<Snapshot, string>> {
  const args: Record<string, unknown> = { ...precondition.args };
  for (const [readArgument, changeArgument] of Object.entries(precondition.argsFrom))
    args[readArgument] = changeArgs[changeArgument];
  const readKey = callKey(precondition.read, args);
  const result = await read(precondition.read, args);
  if (!result.ok) return err(STALE.readFailed(readKey, result.error));
  const value = { output: result.value };
  if (precondition.fields.length === 0)
    return ok({ readKey, digest: createHash("sha256").update(canonicalJson(value)).digest("hex") });
  const fields: Record<string, unknown> = {};
  for (const field of precondition.fields) fields[field] = dotted(value, field);
  return ok({ readKey, fields });
}

/** Why the state moved between `then` and `now`; undefined when it did not. */
export function moved(then: Snapshot, now: Snapshot): string | undefined {
  if (then.digest !== undefined) return then.digest === now.digest ? undefined : STALE.digestMoved(then.readKey);
  const changes = Object.entries(then.fields ?? {})
    .filter(([field, old]) => canonicalJson(old) !== canonicalJson(now.fields?.[field]))
    .map(([field, old]) => ({ field, old, now: now.fields?.[field] ?? null }));
  return changes.length === 0 ? undefined : STALE.moved(changes, then.readKey);
}

function dotted(value: unknown, path: string): unknown {
  let current = value;
  for (const part of path.split(".")) {
    if (current === null || typeof current !== "object") return null;
    current = (current as Record<string, unknown>)[part];
  }
  return current ?? null;
}
