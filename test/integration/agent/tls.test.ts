/**
 * HTTPS and mTLS on the attach listener, with certificates made by openssl inside the test:
 * TLS serves the API and builds https session urls; a client CA refuses clients without a
 * certificate it signed at the handshake, serves those with one, counts as the authentication
 * gate for a non-loopback bind, and shows as the mtls scheme on the agent card. The attacks on
 * the mTLS identity are in test/security/attach-mtls.test.ts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Daemon, startDaemon, tempDir } from "../../support/daemon.ts";
import { TestCertificates } from "../../support/test-certificates.ts";

let dir: string;
let tlsOnly: Daemon;
let mutual: Daemon;

function makeCertificates(): void {
  dir = tempDir("spar-tls-");
  new TestCertificates(dir)
    .ca("ca", "/CN=spar test CA")
    .signed("server", "/CN=localhost", "ca", { server: true })
    .signed("client", "/CN=alice", "ca");
}

const pem = (name: string) => readFileSync(join(dir, name), "utf8");

beforeAll(async () => {
  makeCertificates();
  const tlsArgs = [`--attach-tls-cert=${join(dir, "server.crt")}`, `--attach-tls-key=${join(dir, "server.key")}`];
  [tlsOnly, mutual] = await Promise.all([
    startDaemon({ args: [...tlsArgs, "--multi-session"] }),
    startDaemon({
      args: [
        ...tlsArgs,
        `--attach-client-ca=${join(dir, "ca.crt")}`,
        "--attach-listen=0.0.0.0:0",
        "--agent-card-description=mTLS agent",
      ],
    }),
  ]);
});
afterAll(async () => {
  await Promise.all([tlsOnly.sigterm(), mutual.sigterm()]);
});

test("TLS: the API is served over https and session urls say https", async () => {
  expect(tlsOnly.baseUrl).toStartWith("https://");
  const created = await fetch(`${tlsOnly.baseUrl}/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    tls: { ca: pem("ca.crt") },
  });
  expect(created.status).toBe(201);
  expect(((await created.json()) as { url: string }).url).toStartWith(
    `https://127.0.0.1:${tlsOnly.port}/sessions/spar/`,
  );
  await expect(fetch(`http://127.0.0.1:${tlsOnly.port}/healthz`)).rejects.toThrow();
});

test("mTLS: no client certificate, no connection; a signed one is served", async () => {
  await expect(fetch(`${mutual.baseUrl}/healthz`, { tls: { ca: pem("ca.crt") } })).rejects.toThrow();
  const withCert = { tls: { ca: pem("ca.crt"), cert: pem("client.crt"), key: pem("client.key") } };
  expect((await fetch(`${mutual.baseUrl}/sessions`, withCert)).status).toBe(200);
  const card = (await (await fetch(`${mutual.baseUrl}/.well-known/agent-card.json`, withCert)).json()) as Record<
    string,
    unknown
  >;
  expect(card.securitySchemes).toEqual({ mtls: { type: "mutualTLS" } });
  expect(card.security).toEqual([{ mtls: [] }]);
  expect(mutual.log()).not.toContain("has no token");
});

test("mTLS: the certificate subject is the caller, on plain requests and event streams; there is no inner port", async () => {
  const withCert = { tls: { ca: pem("ca.crt"), cert: pem("client.crt"), key: pem("client.key") } };
  expect(await (await fetch(`${mutual.baseUrl}/whoami`, withCert)).json()).toEqual({
    identity: "CN=alice",
    admin: false,
    source: "mtls",
  });
  const abort = new AbortController();
  const stream = await fetch(`${mutual.baseUrl}/sessions/default/events`, { ...withCert, signal: abort.signal });
  const reader = stream.body?.getReader();
  const first = new TextDecoder().decode((await reader?.read())?.value);
  expect(first).toContain("event: capabilities");
  expect(first).toContain('"caller_id":"CN=alice"');
  abort.abort();
  expect(mutual.log()).toContain("no inner port");
  expect(mutual.log()).not.toMatch(/HTTP server behind it is on/);
});
