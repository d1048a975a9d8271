/**
 * The outbound guard against real local servers (src/net/outbound-guard.ts): a name is resolved
 * once through the injected resolver and the request goes to that address with the name in
 * `Host` (and, over https, as the TLS server name the certificate is checked against); userinfo
 * becomes Basic auth and credentials do not cross origins; 303 turns into GET, 307 resends the
 * body; environment proxies are not used; resolution failures, aborts and odd answers.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseOutboundAllowList } from "../../../src/net/outbound-allow-list.ts";
import { OutboundGuard, type Resolver } from "../../../src/net/outbound-guard.ts";
import { tempDir } from "../../support/daemon.ts";

const never = new AbortController().signal;

function allow(...entries: string[]) {
  const parsed = parseOutboundAllowList(entries);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
}

/** A resolver from a table, counting its lookups per name. */
function tableResolver(table: Record<string, string[]>): Resolver & { lookups: Map<string, number> } {
  const lookups = new Map<string, number>();
  const resolve = async (hostname: string) => {
    lookups.set(hostname, (lookups.get(hostname) ?? 0) + 1);
    const answer = table[hostname];
    if (answer === undefined) throw new Error(`getaddrinfo ENOTFOUND ${hostname}`);
    return answer;
  };
  return Object.assign(resolve, { lookups });
}

interface Seen {
  method: string;
  path: string;
  host: string | null;
  authorization: string | null;
  body: string;
}

function recordingServer(redirects: Record<string, [number, string]> = {}) {
  const seen: Seen[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      const path = new URL(request.url).pathname;
      seen.push({
        method: request.method,
        path,
        host: request.headers.get("host"),
        authorization: request.headers.get("authorization"),
        body: await request.text(),
      });
      const redirect = redirects[path];
      if (redirect) return new Response(null, { status: redirect[0], headers: { location: redirect[1] } });
      return new Response(`served ${path}`);
    },
  });
  return { server, seen };
}

describe("plain http", () => {
  const { server, seen } = recordingServer({ "/see-other": [303, "/landing"], "/temporary": [307, "/landing"] });
  const other = recordingServer();
  afterAll(() => {
    server.stop(true);
    other.server.stop(true);
  });
  const resolver = tableResolver({ "app.test": ["127.0.0.1"], "other.test": ["127.0.0.1"] });
  const guard = new OutboundGuard({ allow: allow("127.0.0.1"), resolve: resolver });

  test("a name is resolved once and reached at the checked address, its name in Host; the answer names the URL and the address", async () => {
    const answer = await guard.fetch(`http://app.test:${server.port}/hello?x=1`, { signal: never });
    if (!answer.ok) throw new Error(answer.message);
    expect(await answer.response.text()).toBe("served /hello");
    expect(answer.url.href).toBe(`http://app.test:${server.port}/hello?x=1`);
    expect(answer.address).toBe("127.0.0.1");
    expect(seen.at(-1)).toMatchObject({ method: "GET", path: "/hello", host: `app.test:${server.port}` });
    expect(resolver.lookups.get("app.test")).toBe(1);
  });

  test("userinfo becomes Basic auth, percent-decoded", async () => {
    const answer = await guard.fetch(`http://u%40x:p%3Aw@app.test:${server.port}/auth`, { signal: never });
    expect(answer.ok).toBe(true);
    expect(seen.at(-1)?.authorization).toBe(`Basic ${Buffer.from("u@x:p:w").toString("base64")}`);
  });

  test("303 turns a POST into a GET without its body; 307 sends method and body again", async () => {
    await guard.fetch(`http://app.test:${server.port}/see-other`, {
      signal: never,
      method: "POST",
      body: "payload",
      headers: { "content-type": "text/plain" },
    });
    expect(seen.slice(-2).map((row) => [row.method, row.path, row.body])).toEqual([
      ["POST", "/see-other", "payload"],
      ["GET", "/landing", ""],
    ]);
    await guard.fetch(`http://app.test:${server.port}/temporary`, { signal: never, method: "POST", body: "again" });
    expect(seen.slice(-2).map((row) => [row.method, row.path, row.body])).toEqual([
      ["POST", "/temporary", "again"],
      ["POST", "/landing", "again"],
    ]);
  });

  test("an Authorization header is kept on the same origin and dropped on a redirect to another", async () => {
    const hops = recordingServer({
      "/same": [302, "/after"],
      "/away": [302, `http://other.test:${other.server.port}/there`],
    });
    try {
      const headers = { authorization: "Bearer secret-token" };
      await guard.fetch(`http://app.test:${hops.server.port}/same`, { signal: never, headers });
      expect(hops.seen.map((row) => row.authorization)).toEqual(["Bearer secret-token", "Bearer secret-token"]);
      await guard.fetch(`http://app.test:${hops.server.port}/away`, { signal: never, headers });
      expect(other.seen.at(-1)).toMatchObject({
        path: "/there",
        host: `other.test:${other.server.port}`,
        authorization: null,
      });
    } finally {
      hops.server.stop(true);
    }
  });

  test("redirect: manual hands back the redirect itself", async () => {
    const answer = await guard.fetch(`http://app.test:${server.port}/see-other`, { signal: never, redirect: "manual" });
    expect(answer.ok && answer.response.status).toBe(303);
  });

  test("an environment proxy is not used: the request goes to the checked address", async () => {
    const saved = { lower: process.env.http_proxy, upper: process.env.HTTP_PROXY };
    process.env.http_proxy = "http://127.0.0.1:9";
    process.env.HTTP_PROXY = "http://127.0.0.1:9";
    try {
      const answer = await guard.fetch(`http://app.test:${server.port}/direct`, { signal: never });
      expect(answer.ok && (await answer.response.text())).toBe("served /direct");
    } finally {
      for (const [name, value] of [
        ["http_proxy", saved.lower],
        ["HTTP_PROXY", saved.upper],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});

describe("names that do not resolve well", () => {
  test("a failed lookup, an empty answer and a non-address answer are refusals naming the host", async () => {
    const guard = new OutboundGuard({ resolve: tableResolver({ "empty.test": [], "odd.test": ["not-an-ip"] }) });
    expect(await guard.check("http://missing.test/", never)).toEqual({
      ok: false,
      reason: "unresolved",
      message: "missing.test does not resolve (getaddrinfo ENOTFOUND missing.test)",
    });
    expect(await guard.check("http://empty.test/", never)).toEqual({
      ok: false,
      reason: "unresolved",
      message: "empty.test does not resolve (no addresses)",
    });
    expect(await guard.check("http://odd.test/", never)).toEqual({
      ok: false,
      reason: "forbidden-address",
      message: 'refused: odd.test resolves to "not-an-ip", which is not an IP address',
    });
  });

  test("an abort during the lookup rejects with the abort reason", async () => {
    let asked: () => void = () => {};
    const lookup = new Promise<void>((resolve) => (asked = resolve));
    const guard = new OutboundGuard({
      resolve: () => {
        asked();
        return new Promise(() => {});
      },
    });
    const controller = new AbortController();
    const fetching = guard.fetch("http://hangs.test/", { signal: controller.signal });
    await lookup;
    controller.abort(new DOMException("stop", "AbortError"));
    await expect(fetching).rejects.toThrow("stop");
  });

  test("of several answers, IPv4 is preferred; the system resolver answers localhost", async () => {
    const guard = new OutboundGuard({
      allow: allow("::1", "127.0.0.1"),
      resolve: tableResolver({ "dual.test": ["::1", "127.0.0.1"] }),
    });
    const checked = await guard.check("http://dual.test/", never);
    expect(checked.ok && checked.address.family).toBe(4);
    const system = await new OutboundGuard({ allow: allow("127.0.0.0/8", "::1") }).check("http://localhost/", never);
    expect(system.ok).toBe(true);
  });
});

describe("https to the checked address", () => {
  const dir = tempDir("spar-outbound-tls-");
  const openssl = (args: string[]) => {
    const result = Bun.spawnSync(["openssl", ...args], { cwd: dir, stderr: "pipe" });
    if (result.exitCode !== 0) throw new Error(`openssl ${args.join(" ")}: ${result.stderr.toString()}`);
  };
  openssl([
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    "secure.key",
    "-out",
    "secure.crt",
    "-days",
    "1",
    "-subj",
    "/CN=secure.test",
    "-addext",
    "subjectAltName=DNS:secure.test",
  ]);
  const cert = readFileSync(join(dir, "secure.crt"), "utf8");
  const hosts: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert, key: readFileSync(join(dir, "secure.key"), "utf8") },
    fetch: (request) => {
      hosts.push(request.headers.get("host") ?? "");
      return new Response("secret page");
    },
  });
  afterAll(() => server.stop(true));
  const resolve = tableResolver({ "secure.test": ["127.0.0.1"], "wrong.test": ["127.0.0.1"] });

  test("the certificate is checked against the URL's name, not the address connected to", async () => {
    const guard = new OutboundGuard({ allow: allow("127.0.0.1"), resolve, tls: { ca: cert } });
    const answer = await guard.fetch(`https://secure.test:${server.port}/`, { signal: never });
    expect(answer.ok && (await answer.response.text())).toBe("secret page");
    expect(hosts.at(-1)).toBe(`secure.test:${server.port}`);
    await expect(guard.fetch(`https://wrong.test:${server.port}/`, { signal: never })).rejects.toThrow(
      /ALTNAME|altname|Hostname/i,
    );
    await expect(guard.fetch(`https://127.0.0.1:${server.port}/`, { signal: never })).rejects.toThrow(
      /ALTNAME|altname|IP/i,
    );
  });

  test("verification is never off: without the CA the self-signed server is refused", async () => {
    const guard = new OutboundGuard({ allow: allow("127.0.0.1"), resolve });
    await expect(guard.fetch(`https://secure.test:${server.port}/`, { signal: never })).rejects.toThrow(
      /self.signed|SELF_SIGNED/i,
    );
  });
});
