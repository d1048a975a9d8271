/**
 * One place where a listener's failures become its wire answers: a SparError (and HttpProblem) by
 * its code (docs/attach-api.md#status-codes, `{error, ...details}`, the headers its status needs),
 * a body that fails its valibot schema as a 400 naming the field (the message the daemon always
 * gave, not Elysia's 422 dump), a path no route serves as 404, a known path with another method as
 * 405 with `Allow` (from the listener's own route list), and anything unexpected as a JSON 500.
 */
import { Elysia } from "elysia";
import type * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import { EMPTY_BODY } from "./body-guards.ts";
import { validate } from "./request-body.ts";
import { requestUrl } from "./request-url.ts";
import { errorResponse, json } from "./responses.ts";

/** The routes a listener serves, as Elysia lists them (`app.routes`). */
export type RouteList = () => ReadonlyArray<{ method: string; path: string }>;

interface CompiledRoute {
  method: string;
  pattern: RegExp;
}

function compile(path: string): RegExp {
  const source = path
    .split("/")
    .map((segment) => (segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${source}$`);
}

/** Methods a path is served with (HEAD beside GET, as Elysia answers it). */
export function allowedMethods(routes: readonly CompiledRoute[], pathname: string): string[] {
  const methods = new Set<string>();
  for (const route of routes) {
    if (!route.pattern.test(pathname)) continue;
    methods.add(route.method);
  }
  return [...methods];
}

function validationAnswer(error: { validator?: { schema?: unknown }; value?: unknown }): SparError {
  const declared = error.validator?.schema as (v.GenericSchema & { wrapped?: v.GenericSchema }) | undefined;
  // An optional body's schema wraps the object schema: its own messages name the fields.
  const schema = declared?.wrapped ?? declared;
  if (error.value === undefined || error.value === EMPTY_BODY)
    return new SparError("bad_request", "request body is empty");
  if (schema === undefined) return new SparError("bad_request", "invalid request body");
  const checked = validate(schema, error.value);
  return checked.ok ? new SparError("bad_request", "invalid request body") : checked.error;
}

export function errorMapper(routes: RouteList) {
  let compiled: CompiledRoute[] | undefined;
  const known = () => {
    compiled ??= routes().map((route) => ({ method: route.method, pattern: compile(route.path) }));
    return compiled;
  };
  return new Elysia({ name: "spar.error-mapper" }).onError({ as: "global" }, ({ code, error, request }) => {
    if (code === "NOT_FOUND") {
      const path = requestUrl(request).pathname;
      const allowed = allowedMethods(known(), path);
      if (allowed.length > 0) {
        const list = allowed.join(", ");
        return json(
          405,
          { error: `method ${request.method} is not allowed on ${path}; allowed: ${list}` },
          { allow: list },
        );
      }
      return json(404, { error: `no such endpoint: ${request.method} ${path}` });
    }
    if (code === "VALIDATION") return errorResponse(validationAnswer(error as never));
    if (code === "PARSE") {
      // A refusal of our own parsers (CSRF, the body limit, malformed JSON) arrives as the cause.
      const cause = (error as Error).cause;
      return errorResponse(cause instanceof SparError ? cause : new SparError("bad_request", "malformed request body"));
    }
    return errorResponse(error);
  });
}
