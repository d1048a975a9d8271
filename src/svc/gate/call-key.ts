/**
 * The call key an operator reads in a write-gate question, an audit line and a decision record
 * (docs/svc.md#questions): `tool(k1=v1, k2=v2)` with keys sorted, strings unquoted, other values as
 * compact JSON, a value longer than 120 characters cut and ended with `…`, `tool()` without
 * arguments. Pure.
 */
import { canonicalJson } from "../../core/permission-policy.ts";

/** A rendered value longer than this is cut (and makes a change set not grantable). */
export const KEY_VALUE_LIMIT = 120;

export function renderValue(value: unknown): string {
  return typeof value === "string" ? value : canonicalJson(value);
}

export function callKey(tool: string, args: Readonly<Record<string, unknown>>): string {
  const parts = Object.keys(args)
    .sort()
    .map((name) => {
      const text = renderValue(args[name]);
      return `${name}=${text.length > KEY_VALUE_LIMIT ? `${text.slice(0, KEY_VALUE_LIMIT)}…` : text}`;
    });
  return `${tool}(${parts.join(", ")})`;
}
