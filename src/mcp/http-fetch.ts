/**
 * The fetch an http (streamable HTTP) tool server is reached through: an ambient-credential
 * bearer token when the catalog asks for `auth.google_oauth`, and 4xx/5xx answers to requests
 * turned into errors that carry the server's explanation when the body is a JSON content type
 * under 32 KiB, else the status line only (spec "HTTP tool server answers 4xx or 5xx").
 *
 * Ambient credentials (D125): the GCE/GKE metadata server's default service-account token
 * (`GCE_METADATA_HOST`, default `metadata.google.internal`), cached until a minute before expiry.
 * Empty scopes mean the broad cloud-platform scope.
 */
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";

export const ERROR_BODY_LIMIT = 32 * 1024;
const CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform";

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

export type TokenSource = () => Promise<string>;

/** The metadata server's access token for the default service account, cached. */
export function metadataTokenSource(
  scopes: readonly string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): TokenSource {
  let cached: { token: string; until: number } | undefined;
  return async () => {
    if (cached && cached.until > Date.now()) return cached.token;
    const host = env.GCE_METADATA_HOST || "metadata.google.internal";
    const scope = (scopes.length > 0 ? scopes : [CLOUD_PLATFORM]).join(",");
    const url = `http://${host}/computeMetadata/v1/instance/service-accounts/default/token?scopes=${encodeURIComponent(scope)}`;
    let response: Response;
    try {
      response = await fetch(url, { headers: { "Metadata-Flavor": "Google" }, signal: AbortSignal.timeout(10_000) });
    } catch (error) {
      throw new Error(
        `no ambient credentials: the metadata server at ${host} is unreachable (${error instanceof Error ? error.message : String(error)})`,
      );
    }
    if (!response.ok)
      throw new Error(`no ambient credentials: the metadata server answered ${await explainStatus(response)}`);
    const body = (await response.json().catch(() => ({}))) as { access_token?: unknown; expires_in?: unknown };
    if (typeof body.access_token !== "string" || body.access_token === "")
      throw new Error("no ambient credentials: the metadata server's answer has no access_token");
    const seconds = typeof body.expires_in === "number" ? body.expires_in : 300;
    cached = { token: body.access_token, until: Date.now() + Math.max(0, seconds - 60) * 1000 };
    return body.access_token;
  };
}

/** fetch for the SDK transport: adds the bearer token, turns a refused POST into McpHttpError. */
export function serverFetch(token: TokenSource | undefined): FetchLike {
  return async (url, init) => {
    const headers = new Headers(init?.headers);
    if (token) headers.set("authorization", `Bearer ${await token()}`);
    const response = await fetch(url, { ...init, headers });
    // GET (the optional server stream, 405 when unsupported) and DELETE (session end) keep the SDK's handling.
    const method = (init?.method ?? "GET").toUpperCase();
    if (method === "POST" && response.status >= 400)
      throw new McpHttpError(response.status, `tool server answered ${await explainStatus(response)}`);
    return response;
  };
}
