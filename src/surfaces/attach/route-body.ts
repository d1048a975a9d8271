/**
 * What attach routes share when reading a request: the JSON body validated against a valibot
 * schema (400 naming the problem), and the verified caller an audit row may name.
 */
import type * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import { readJsonBody, validate } from "../http/request-body.ts";
import type { RouteContext } from "./route-table.ts";

/** The body as read, without a schema (for routes that inspect it first, e.g. for `owner`). */
export async function rawBody(route: RouteContext): Promise<unknown> {
  const parsed = await readJsonBody(route.request);
  if (!parsed.ok) throw parsed.error;
  return parsed.value;
}

/** A body that must be there (an empty one is a 400). */
export async function requiredBody<T extends v.GenericSchema>(
  route: RouteContext,
  schema: T,
): Promise<v.InferOutput<T>> {
  const raw = await rawBody(route);
  if (raw === undefined) throw new SparError("bad_request", "request body is empty");
  const valid = validate(schema, raw);
  if (!valid.ok) throw valid.error;
  return valid.value;
}

/** A body that may be absent (undefined then); present, it must be valid. */
export async function optionalBody<T extends v.GenericSchema>(
  route: RouteContext,
  schema: T,
): Promise<v.InferOutput<T> | undefined> {
  const raw = await rawBody(route);
  if (raw === undefined) return undefined;
  const valid = validate(schema, raw);
  if (!valid.ok) throw valid.error;
  return valid.value;
}

/** The caller's identity when one was verified; never a placeholder for anonymous callers. */
export function verifiedIdentity(route: RouteContext): string | undefined {
  return route.caller.source === "anonymous" ? undefined : route.caller.identity;
}
