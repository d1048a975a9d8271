/**
 * Ambient Google credentials for http tool servers declaring `auth.google_oauth`
 * (docs/configuration.md#tool-server-catalog-mcpjson), through google-auth-library's application-default credentials:
 * `GOOGLE_APPLICATION_CREDENTIALS` (a service-account, authorized-user or external-account file),
 * else gcloud's well-known file (`$CLOUDSDK_CONFIG` or `~/.config/gcloud`), else the GCE/GKE
 * metadata server (`GCE_METADATA_HOST`; `METADATA_SERVER_DETECTION` as the library reads it).
 * The library reads the process environment, caches the token and refreshes it before expiry.
 * Empty scopes mean the broad cloud-platform scope.
 *
 * Owns the token source a server's requests take their bearer from, and the startup check
 * (`checkAmbientCredentials`) that obtains a token once per such server and fails naming the
 * server and the reason when it cannot.
 */
import { GoogleAuth } from "google-auth-library";
import { type Result, err, ok } from "../core/result.ts";
import type { McpCatalog } from "./catalog.ts";

export const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform";

/** How long one token fetch may take (the library sets no limit of its own on every path). */
export const TOKEN_TIMEOUT_MS = 15_000;

/**
 * Given to the library as the project id: a bearer needs none, and without one the library looks
 * it up before the first token (runs `gcloud config config-helper`, asks the metadata server, or
 * Cloud Resource Manager for external accounts): seconds of delay, and a failed lookup there would
 * fail a token that could have been had. Nothing we send carries it.
 */
const NO_PROJECT_NEEDED = "spar-bearer-token-only";

/** A bearer token for one request; rejects with why when none can be had. */
export type TokenSource = () => Promise<string>;

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The scopes a token is asked for: the catalog's, or cloud-platform when it lists none. */
export function effectiveScopes(scopes: readonly string[]): string[] {
  return scopes.length > 0 ? [...scopes] : [CLOUD_PLATFORM_SCOPE];
}

/**
 * One server's token source: one GoogleAuth (its cache lives as long as the source), every call
 * answering the cached token or a refreshed one. Errors read `no ambient credentials: <why>`.
 */
export function googleTokenSource(scopes: readonly string[], timeoutMs: number = TOKEN_TIMEOUT_MS): TokenSource {
  const auth = new GoogleAuth({ scopes: effectiveScopes(scopes), projectId: NO_PROJECT_NEEDED });
  return async () => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no token within ${timeoutMs / 1000} s`)), timeoutMs);
    });
    let token: string | null | undefined;
    try {
      token = await Promise.race([auth.getAccessToken(), timedOut]);
    } catch (error) {
      throw new Error(`no ambient credentials: ${message(error)}`);
    } finally {
      clearTimeout(timer);
    }
    if (!token) throw new Error("no ambient credentials: the credentials gave no access token");
    return token;
  };
}

/**
 * Startup: obtain a token once for every http server declaring `auth.google_oauth`
 * (concurrently). An error names each failing server and why; nothing to check is ok.
 */
export async function checkAmbientCredentials(
  catalog: McpCatalog | undefined,
  options: { timeoutMs?: number } = {},
): Promise<Result<void>> {
  const servers = (catalog?.servers ?? []).flatMap((server) =>
    server.transport === "http" && server.googleOauthScopes !== undefined
      ? [{ name: server.name, scopes: server.googleOauthScopes }]
      : [],
  );
  const failures = await Promise.all(
    servers.map(async ({ name, scopes }) => {
      try {
        await googleTokenSource(scopes, options.timeoutMs)();
        return undefined;
      } catch (error) {
        return `tool server ${name} (auth.google_oauth): ${message(error)}`;
      }
    }),
  );
  const errors = failures.filter((failure): failure is string => failure !== undefined);
  return errors.length === 0 ? ok(undefined) : err(errors.join("; "));
}
