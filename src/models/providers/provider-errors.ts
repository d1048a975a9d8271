/**
 * Provider failures as ModelCallError(message, code): the HTTP status when there is one (so
 * turn-errors.ts classifies 429, 401, 404, 503...), else the provider's own error code mapped to
 * the status it stands for. Never includes request headers (the key travels there). Pure.
 */
import { APICallError, LoadAPIKeyError, RetryError, StreamProviderError } from "ai";
import { ModelCallError, type RemoteProvider } from "../../core/model.ts";

/** Error types and codes that arrive inside a stream (no HTTP status), by the status they mean. */
const STREAM_CODES: Readonly<Record<string, string>> = {
  // Anthropic `event: error` types
  invalid_request_error: "400",
  authentication_error: "401",
  permission_error: "403",
  not_found_error: "404",
  request_too_large: "413",
  rate_limit_error: "429",
  api_error: "500",
  overloaded_error: "529",
  // OpenAI `error` / `response.failed` codes
  invalid_api_key: "401",
  model_not_found: "404",
  rate_limit_exceeded: "429",
  insufficient_quota: "429",
  server_error: "500",
};

export function toModelCallError(error: unknown, provider: RemoteProvider): ModelCallError {
  if (error instanceof ModelCallError) return error;
  if (RetryError.isInstance(error) && error.lastError !== undefined) return toModelCallError(error.lastError, provider);
  if (APICallError.isInstance(error)) return fromApiCallError(error, provider);
  if (StreamProviderError.isInstance(error)) {
    const code = error.statusCode !== undefined ? String(error.statusCode) : streamCode(error.code, error.type);
    return new ModelCallError(error.message, code);
  }
  if (LoadAPIKeyError.isInstance(error)) return new ModelCallError(error.message, "UNAUTHENTICATED");
  if (error instanceof Error) return new ModelCallError(error.message);
  const body =
    typeof error === "object" && error !== null
      ? (error as { message?: unknown; type?: unknown; code?: unknown })
      : undefined;
  if (typeof body?.message === "string") return new ModelCallError(body.message, streamCode(body.code, body.type));
  return new ModelCallError(`${provider} model call failed: ${String(error)}`);
}

function fromApiCallError(error: APICallError, provider: RemoteProvider): ModelCallError {
  const status = error.statusCode;
  if (status === undefined) {
    // No response at all: the server could not be reached (refused, reset, DNS).
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return new ModelCallError(`cannot reach the ${provider} API at ${originOf(error.url)}${cause}`, "UNAVAILABLE");
  }
  const message =
    bodyMessage(error.responseBody) ??
    (error.message.trim() === "" ? `${provider} API answered HTTP ${status}` : error.message);
  if (provider === "google" && status === 400 && googleReason(error.responseBody) === "API_KEY_INVALID") {
    // Gemini answers a bad key with 400 INVALID_ARGUMENT; it is a credentials failure.
    return new ModelCallError(message, "UNAUTHENTICATED");
  }
  return new ModelCallError(message, String(status));
}

function streamCode(code: unknown, type: unknown): string | undefined {
  for (const candidate of [code, type]) {
    if (typeof candidate === "number") return String(candidate);
    if (typeof candidate === "string" && candidate !== "") return STREAM_CODES[candidate] ?? candidate.toUpperCase();
  }
  return undefined;
}

function parseBody(body: string | undefined): Record<string, unknown> | undefined {
  if (body === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The explanation in an error body: `error.message` (OpenAI, Anthropic, Google and most
 * compatible servers), else a top-level `message` or `detail` (vLLM, FastAPI-style servers).
 */
function bodyMessage(body: string | undefined): string | undefined {
  const parsed = parseBody(body);
  const nested = parsed?.error;
  const candidates = [
    typeof nested === "object" && nested !== null ? (nested as { message?: unknown }).message : nested,
    parsed?.message,
    parsed?.detail,
  ];
  const found = candidates.find((candidate) => typeof candidate === "string" && candidate.trim() !== "");
  return typeof found === "string" ? found : undefined;
}

/** `error.details[].reason` of a Google error body, when present. */
function googleReason(body: string | undefined): string | undefined {
  const details = (parseBody(body)?.error as { details?: unknown } | undefined)?.details;
  if (!Array.isArray(details)) return undefined;
  const reason = details.find((detail: { reason?: unknown }) => typeof detail?.reason === "string")?.reason;
  return typeof reason === "string" ? reason : undefined;
}

function originOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return "its base URL";
  }
}
