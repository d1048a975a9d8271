/**
 * The fetch an http (streamable HTTP) tool server is reached through: an ambient-credential
 * bearer token on every request when the catalog asks for `auth.google_oauth` (the token source
 * is google-credentials.ts), and 4xx/5xx answers to requests turned into errors that carry the
 * server's explanation when the body is a JSON content type under 32 KiB, else the status line
 * only (docs/agent.md#mcp-tool-servers). Each request is a client span carrying the
 * caller's trace context (telemetry/client-spans.ts) when telemetry is on.
 */
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { tracedFetch } from "../telemetry/client-spans.ts";
import type { TokenSource } from "./google-credentials.ts";

export const ERROR_BODY_LIMIT = 32 * 1024;

export class McpHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The error text for a refused request: status line, plus the JSON body when small enough. */
export async function explainStatus(response: Response): Promise<string> {
  const line = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`;
  const type = (response.headers.get("content-type") ?? "").toLowerCase();
  const declared = Number(response.headers.get("content-length") ?? "NaN");
  if (!/^application\/([a-z0-9.+-]*\+)?json\b/.test(type) || declared >= ERROR_BODY_LIMIT) {
    await response.body?.cancel().catch(() => {});
    return line;
  }
  const body = await readCapped(response, ERROR_BODY_LIMIT);
  if (body === undefined) return line;
  try {
    return `${line}: ${JSON.stringify(JSON.parse(body))}`;
  } catch {
    return line;
  }
}

async function readCapped(response: Response, limit: number): Promise<string | undefined> {
  const reader = response.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size >= limit) {
      await reader.cancel().catch(() => {});
      return undefined;
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/** fetch for the SDK transport: adds the bearer token, turns a refused POST into McpHttpError. */
export function serverFetch(token: TokenSource | undefined): FetchLike {
  return async (url, init) => {
    const headers = new Headers(init?.headers);
    if (token) headers.set("authorization", `Bearer ${await token()}`);
    const response = await tracedFetch(url, { ...init, headers });
    // GET (the optional server stream, 405 when unsupported) and DELETE (session end) keep the SDK's handling.
    const method = (init?.method ?? "GET").toUpperCase();
    if (method === "POST" && response.status >= 400)
      throw new McpHttpError(response.status, `tool server answered ${await explainStatus(response)}`);
    return response;
  };
}
