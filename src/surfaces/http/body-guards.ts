/**
 * What a write request passes once its route is known, before a handler runs: the browser CSRF
 * check (`Content-Type: application/json`, a loopback or same-Host Origin) and the JSON body read
 * within its limit (413 from Content-Length before reading, or while reading a chunked body),
 * strict UTF-8, parsed; an empty body is EMPTY_BODY, an empty object (what an optional body's
 * schema accepts as "no fields") that a required body's answers with "request body is empty". Both are Elysia parsers (`onParse`): they run
 * for matched write routes only, so unknown paths still answer 404/405, and after the guards of
 * `onRequest`, so an unauthenticated request never has its body read.
 */
import { Elysia } from "elysia";
import * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import { WRITE_BODY_LIMIT, readJsonBody } from "./request-body.ts";
import { checkCsrf } from "./request-guards.ts";
import { requestUrl } from "./request-url.ts";

/** The body of a request that sent none: `{}` to a schema, recognised by identity. */
export const EMPTY_BODY: Readonly<Record<string, never>> = Object.freeze({});

/**
 * A required body whose fields are all optional: an empty body fails it (answered "request body
 * is empty"), `{}` sent on purpose passes.
 */
export function nonEmpty<TSchema extends v.GenericSchema>(schema: TSchema) {
  return v.pipe(
    v.custom<unknown>((input) => input !== EMPTY_BODY, "request body is empty"),
    schema,
  );
}

/** The CSRF guard of every write (GET, HEAD and OPTIONS pass); `allowedOrigins` pass too (cors-policy.ts). */
export function csrfGuard(allowedOrigins?: ReadonlySet<string>, jsonTypes: readonly string[] = []) {
  return new Elysia({ name: "spar.csrf-guard", seed: [...(allowedOrigins ?? []), ...jsonTypes] }).onParse(
    { as: "global" },
    ({ request }) => {
      checkCsrf(request, allowedOrigins, jsonTypes);
      return undefined;
    },
  );
}

/** The body limit of a request's path (8 KiB unless a route family says otherwise). */
export type BodyLimit = (pathname: string) => number;

/**
 * JSON bodies within their path's limit and `deadlineMs` (408), on every write route. Every route
 * of ours takes an object (or nothing): a top-level array is refused here, since a valibot object schema whose fields are
 * all optional would accept one (`typeof [] === "object"`), unless the listener answers arrays
 * itself (`arrays`: A2A's JSON-RPC refuses a batch as JSON-RPC, D340).
 */
export function jsonBody(
  limitFor: BodyLimit = () => WRITE_BODY_LIMIT,
  { deadlineMs, arrays = false }: { deadlineMs?: number; arrays?: boolean } = {},
) {
  return new Elysia({ name: "spar.json-body", seed: limitFor }).onParse({ as: "global" }, async ({ request }) => {
    // No DELETE route takes a body: one sent anyway is not read (as before routes were Elysia's).
    if (request.method === "DELETE") return EMPTY_BODY;
    const parsed = await readJsonBody(request, limitFor(requestUrl(request).pathname), deadlineMs);
    if (!parsed.ok) throw parsed.error;
    if (Array.isArray(parsed.value) && !arrays) {
      throw new SparError("bad_request", "invalid request body: must be a JSON object, got an array");
    }
    // A value, not undefined, for an empty body: undefined would hand the body to Elysia's own parser.
    return parsed.value === undefined ? EMPTY_BODY : parsed.value;
  });
}
