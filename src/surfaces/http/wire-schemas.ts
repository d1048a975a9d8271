/**
 * Response shapes every listener shares, as valibot schemas for the OpenAPI document: the error
 * body (D11) and the statuses a route can refuse with. Routes return their own Response objects,
 * so these describe the wire and are not checked at run time.
 */
import * as v from "valibot";

/** `{"error": "<message>"}`, plus the extra keys some refusals carry. */
export const ErrorBody = v.looseObject({ error: v.string() }, "error body");

/** A 429 from a cap or a limiter: the seconds to wait come in the body and `Retry-After`. */
export const RetryBody = v.looseObject({ error: v.string(), retry_after_seconds: v.number() });

const ERROR_STATUSES = [400, 401, 403, 404, 405, 409, 410, 412, 413, 415, 421, 429, 431, 500, 501, 502, 503] as const;
type ErrorStatus = (typeof ERROR_STATUSES)[number];

/** The refusals every guarded route can answer before its handler runs. */
const GUARDED: readonly ErrorStatus[] = [400, 401, 403, 421, 431];
/** Those of a route that reads a body. */
const WITH_BODY: readonly ErrorStatus[] = [...GUARDED, 413, 415];

/** Response schemas: `answers` by status, then the refusals of a guarded route plus `extra`. */
export function responses(
  answers: Readonly<Record<number, v.GenericSchema>>,
  options: { body?: boolean; extra?: readonly ErrorStatus[] } = {},
): Record<number, v.GenericSchema> {
  const refusals = new Set<ErrorStatus>([...(options.body ? WITH_BODY : GUARDED), ...(options.extra ?? [])]);
  const all: Record<number, v.GenericSchema> = { ...answers };
  for (const status of [...refusals].sort((a, b) => a - b)) all[status] ??= status === 429 ? RetryBody : ErrorBody;
  return all;
}

/** A 204: no body. */
export const NoContent = v.undefined();
