/**
 * `meta/v1 Status` bodies, shaped as a real kube-apiserver writes them, and the JSON responses
 * that carry them. Every refusal of the fake goes through here so clients (client-go, kubectl,
 * client-node) decode a Status with the right code and reason, never a bare text error.
 */

export type StatusReason =
  | "BadRequest"
  | "Unauthorized"
  | "Forbidden"
  | "NotFound"
  | "AlreadyExists"
  | "Conflict"
  | "Gone"
  | "Expired"
  | "Invalid"
  | "MethodNotAllowed"
  | "NotAcceptable"
  | "UnsupportedMediaType"
  | "TooManyRequests"
  | "InternalError"
  | "ServiceUnavailable"
  | "Timeout";

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: { reason?: string; message: string; field?: string }[];
  retryAfterSeconds?: number;
}

export interface KubeStatus {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, unknown>;
  status: "Failure" | "Success";
  message: string;
  reason: StatusReason;
  code: number;
  details?: StatusDetails;
}

export function statusObject(code: number, reason: StatusReason, message: string, details?: StatusDetails): KubeStatus {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    code,
    ...(details ? { details } : {}),
  };
}

/** The default reason a real apiserver pairs with an HTTP status code. */
export function reasonForCode(code: number): StatusReason {
  const reasons: Record<number, StatusReason> = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    415: "UnsupportedMediaType",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    503: "ServiceUnavailable",
    504: "Timeout",
  };
  return reasons[code] ?? "InternalError";
}

export function jsonResponse(body: unknown, code = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status: code,
    headers: { "content-type": "application/json", ...headers },
  });
}

export function statusResponse(status: KubeStatus): Response {
  const headers: Record<string, string> = {};
  if (status.details?.retryAfterSeconds !== undefined)
    headers["retry-after"] = String(status.details.retryAfterSeconds);
  return jsonResponse(status, status.code, headers);
}

export function failure(code: number, message: string, details?: StatusDetails): Response {
  return statusResponse(statusObject(code, reasonForCode(code), message, details));
}

export function notFound(resource: string, name: string, group = ""): Response {
  return statusResponse(
    statusObject(404, "NotFound", `${resource}${group ? `.${group}` : ""} "${name}" not found`, {
      name,
      group,
      kind: resource,
    }),
  );
}

export function badRequest(message: string): Response {
  return statusResponse(statusObject(400, "BadRequest", message));
}

/** The Status a watch or list gets for a resourceVersion older than the compaction point. */
export function expiredStatus(requested: number, oldest: number): KubeStatus {
  return statusObject(410, "Expired", `too old resource version: ${requested} (${oldest})`);
}

export const CONTINUE_EXPIRED_MESSAGE =
  "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.";
