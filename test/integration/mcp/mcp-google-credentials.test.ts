/**
 * `auth.google_oauth` through google-auth-library against local token endpoints (no network):
 * the startup check obtains a token once per declaring server from the metadata server or an
 * external-account credentials file (its STS exchange local), defaults empty scopes to
 * cloud-platform, and fails naming the server and the reason when no credentials load or the
 * endpoint refuses. An http tool server's every request carries the bearer; the token is cached,
 * and refreshed by the library once it nears expiry.
 */
import { afterEach, expect, test } from "bun:test";
import type { HttpServer, McpCatalog, ServerConfig } from "../../../src/mcp/catalog.ts";
import { CLOUD_PLATFORM_SCOPE, checkAmbientCredentials } from "../../../src/mcp/google-credentials.ts";
import { ServerConnection } from "../../../src/mcp/server-connection.ts";
import { DEFAULT_MCP_TIMEOUTS } from "../../../src/mcp/types.ts";
import { tempDir } from "../../support/daemon.ts";
import { recordingMcpServer } from "../../fixtures/mcp/recording-http-server.ts";
import {
  ambientEnvironment,
  externalAccountFile,
  fakeMetadataServer,
  fakeStsServer,
  useEnvironment,
} from "../../fixtures/mcp/google-token-endpoints.ts";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function environment(options: Parameters<typeof ambientEnvironment>[0]): void {
  cleanups.push(useEnvironment(ambientEnvironment(options)));
}

const google = (name: string, scopes: string[], url = "http://127.0.0.1:9/mcp"): HttpServer => ({
  name,
  transport: "http",
  url,
  googleOauthScopes: scopes,
  overrides: {},
});
const catalog = (...servers: ServerConfig[]): McpCatalog => ({ path: "mcp.json", servers });

/** A streamable-HTTP tool server recording every request's Authorization header. */
async function toolServer() {
  const server = await recordingMcpServer();
  cleanups.push(() => server.stop());
  return server;
}

function connection(config: ServerConfig): ServerConnection {
  const held = new ServerConnection(config, DEFAULT_MCP_TIMEOUTS, process.env, tempDir());
  cleanups.push(() => held.stop());
  return held;
}

const never = new AbortController().signal;

test("the metadata server's token: the check passes, asking for the catalog's scopes, cloud-platform when empty", async () => {
  const metadata = fakeMetadataServer();
  cleanups.push(metadata.stop);
  environment({ metadataHost: metadata.address, detection: "assume-present" });
  const checked = await checkAmbientCredentials(
    catalog(google("a", ["https://www.googleapis.com/auth/userinfo.email", "openid"]), google("b", [])),
  );
  expect(checked).toEqual({ ok: true, value: undefined });
  expect(metadata.asked.toSorted()).toEqual([
    CLOUD_PLATFORM_SCOPE,
    "https://www.googleapis.com/auth/userinfo.email,openid",
  ]);
});

test("an external-account credentials file (GOOGLE_APPLICATION_CREDENTIALS) exchanges at its local token endpoint", async () => {
  const sts = fakeStsServer();
  cleanups.push(sts.stop);
  environment({ credentials: externalAccountFile(sts.address) });
  expect((await checkAmbientCredentials(catalog(google("web", [])))).ok).toBe(true);
  expect(sts.asked).toEqual([CLOUD_PLATFORM_SCOPE]);
});

test("every request to the http server carries the bearer; the token is fetched once and cached", async () => {
  const sts = fakeStsServer("sts-456");
  cleanups.push(sts.stop);
  environment({ credentials: externalAccountFile(sts.address) });
  const web = await toolServer();
  const server = connection(google("web", ["https://www.googleapis.com/auth/cloud-platform.read-only"], web.url));
  for (const key of ["alpha", "beta"])
    expect(await server.call("lookup", { key }, never)).toMatchObject({ output: { content: `value of ${key}` } });
  expect(web.authorizations.length).toBeGreaterThanOrEqual(3);
  expect(new Set(web.authorizations)).toEqual(new Set(["Bearer sts-456"]));
  expect(sts.asked).toEqual(["https://www.googleapis.com/auth/cloud-platform.read-only"]);
});

test("a token near its expiry is refreshed by the library before the next request", async () => {
  const metadata = fakeMetadataServer("tok-1");
  cleanups.push(metadata.stop);
  environment({ metadataHost: metadata.address, detection: "assume-present" });
  // Inside the library's eager-refresh window (5 minutes): the next request refreshes it.
  metadata.state.expiresIn = 60;
  const web = await toolServer();
  const server = connection(google("web", [], web.url));
  await server.call("lookup", { key: "alpha" }, never);
  metadata.state.token = "tok-2";
  metadata.state.expiresIn = 3600;
  const before = web.authorizations.length;
  await server.call("lookup", { key: "beta" }, never);
  expect(web.authorizations.slice(before)).toContain("Bearer tok-2");
  expect(web.authorizations.at(-1)).toBe("Bearer tok-2");
  expect(web.authorizations[0]).toBe("Bearer tok-1");
});

test("no ambient credentials at all: the check fails naming each declaring server and the reason; others are not checked", async () => {
  environment({});
  const checked = await checkAmbientCredentials(
    catalog(
      google("first", []),
      { name: "open", transport: "http", url: "http://127.0.0.1:9/mcp", overrides: {} },
      google("second", ["openid"]),
    ),
  );
  expect(checked.ok).toBe(false);
  const error = checked.ok ? "" : checked.error;
  expect(error).toStartWith(
    "tool server first (auth.google_oauth): no ambient credentials: Could not load the default credentials",
  );
  expect(error).toContain("; tool server second (auth.google_oauth): no ambient credentials:");
  expect(error).not.toContain("open");
});

test("a refusing token exchange fails the check with the endpoint's explanation; a missing credentials file names the file", async () => {
  const sts = fakeStsServer();
  cleanups.push(sts.stop);
  sts.state.refuse = 403;
  environment({ credentials: externalAccountFile(sts.address) });
  const refused = await checkAmbientCredentials(catalog(google("web", [])));
  expect(refused.ok).toBe(false);
  expect(refused.ok ? "" : refused.error).toBe(
    "tool server web (auth.google_oauth): no ambient credentials: Error code invalid_request: refused",
  );
  const missing = `${tempDir("spar-adc-")}/absent.json`;
  environment({ credentials: missing });
  const unreadable = await checkAmbientCredentials(catalog(google("web", [])));
  expect(unreadable.ok ? "" : unreadable.error).toContain(missing);
});

test("a metadata server that refuses the token: the check fails with why; a catalog with no google_oauth server passes", async () => {
  const metadata = fakeMetadataServer();
  cleanups.push(metadata.stop);
  metadata.state.refuse = 403;
  environment({ metadataHost: metadata.address, detection: "assume-present" });
  const checked = await checkAmbientCredentials(catalog(google("web", [])));
  expect(checked.ok ? "" : checked.error).toStartWith(
    "tool server web (auth.google_oauth): no ambient credentials: A Forbidden error was returned",
  );
  expect(checked.ok ? "" : checked.error).toEndWith("Could not refresh access token: refused");
  expect(await checkAmbientCredentials(undefined)).toEqual({ ok: true, value: undefined });
  expect(
    await checkAmbientCredentials(
      catalog({ name: "open", transport: "http", url: "http://127.0.0.1:9/mcp", overrides: {} }),
    ),
  ).toEqual({ ok: true, value: undefined });
});
