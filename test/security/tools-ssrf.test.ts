/**
 * SSRF through the builtin `fetch_url` tool (it runs without a prompt): every form of a
 * metadata, loopback, private or otherwise special address, as a literal, behind a name, behind
 * a redirect, and through DNS rebinding, is refused with the host, the address and the range
 * named, and the target is never contacted (canary servers on 127.0.0.1 and 127.0.0.2 count
 * every request that reaches them). Credentials in a URL never show in a result or an error.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { realpathSync } from "node:fs";
import { parseOutboundAllowList } from "../../src/net/outbound-allow-list.ts";
import { OutboundGuard, type OutboundGuardOptions, type Resolver } from "../../src/net/outbound-guard.ts";
import { runBuiltin } from "../../src/tools/builtin-tools.ts";
import type { ToolOutcome } from "../../src/tools/builtin-tool.ts";
import { tempDir } from "../support/daemon.ts";

const root = realpathSync(tempDir("spar-ssrf-"));
let callCount = 0;

function allow(...entries: string[]) {
  const parsed = parseOutboundAllowList(entries);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
}

/** fetch_url with a guard built from these options (default: no allow list, the system resolver). */
function fetchUrlWith(options: OutboundGuardOptions = {}): (url: string) => Promise<ToolOutcome> {
  const settings = { root, disabled: new Set<string>(), outbound: new OutboundGuard(options) };
  return (url) =>
    runBuiltin({ callId: `ssrf${callCount++}`, name: "fetch_url", args: { url } }, settings, AbortSignal.timeout(5000));
}

const refusedWith = (url: string, error: string): ToolOutcome => ({ output: { url, error }, isError: true });
const NOT_ALLOWED = "not in the outbound allow list";

/** The allowed server on 127.0.0.1 and, on the same port, a canary on 127.0.0.2 that must never be reached. */
const hits = { allowed: [] as string[], canary: [] as string[] };
const allowed = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: (request) => {
    const url = new URL(request.url);
    hits.allowed.push(url.pathname);
    const target = url.searchParams.get("to");
    if (target !== null) return new Response(null, { status: 302, headers: { location: target } });
    return new Response(`allowed ${url.pathname}`);
  },
});
const port = allowed.port as number;
const canary = Bun.serve({
  hostname: "127.0.0.2",
  port,
  fetch: (request) => {
    hits.canary.push(request.url);
    return new Response("canary reached");
  },
});
afterAll(() => {
  allowed.stop(true);
  canary.stop(true);
});

const bouncer = (target: string) => `http://127.0.0.1:${port}/bounce?to=${encodeURIComponent(target)}`;
const onlyLoopbackOne = { allow: allow("127.0.0.1") };

describe("metadata addresses in every form", () => {
  const fetchUrl = fetchUrlWith();

  test("an IPv4-mapped metadata literal is refused", async () => {
    const url = "http://[::ffff:169.254.169.254]/latest/meta-data/";
    expect(await fetchUrl(url)).toEqual(
      refusedWith(
        url,
        `refused: [::ffff:a9fe:a9fe] carries 169.254.169.254 (IPv4-mapped), a cloud metadata address in 169.254.0.0/16, ${NOT_ALLOWED}`,
      ),
    );
  });

  test("an IPv4-compatible metadata literal is refused", async () => {
    const url = "http://[::169.254.169.254]/";
    expect(await fetchUrl(url)).toEqual(
      refusedWith(
        url,
        `refused: [::a9fe:a9fe] carries 169.254.169.254 (IPv4-compatible), a cloud metadata address in 169.254.0.0/16, ${NOT_ALLOWED}`,
      ),
    );
  });

  test("NAT64 metadata literals are refused, the well-known and the local-use prefix", async () => {
    expect(String((await fetchUrl("http://[64:ff9b::169.254.169.254]/")).output.error)).toStartWith(
      "refused: [64:ff9b::a9fe:a9fe] carries 169.254.169.254 (NAT64), a cloud metadata address",
    );
    expect(String((await fetchUrl("http://[64:ff9b:1::a9fe:a9fe]/")).output.error)).toStartWith(
      "refused: [64:ff9b:1::a9fe:a9fe] carries 169.254.169.254 (local-use NAT64), a cloud metadata address",
    );
  });

  test("a 6to4 literal carrying the metadata address is refused", async () => {
    expect(String((await fetchUrl("http://[2002:a9fe:a9fe::1]/")).output.error)).toStartWith(
      "refused: [2002:a9fe:a9fe::1] carries 169.254.169.254 (6to4), a cloud metadata address",
    );
  });

  test("a Teredo literal whose XOR-ed client address is the metadata address is refused", async () => {
    expect(String((await fetchUrl("http://[2001:0:4136:e378:8000:63bf:5601:5601]/")).output.error)).toStartWith(
      "refused: [2001:0:4136:e378:8000:63bf:5601:5601] carries 169.254.169.254 (Teredo client), a cloud metadata address",
    );
  });

  test("decimal, hex, octal and short forms of the metadata address are refused", async () => {
    for (const host of ["2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518", "0xa9.0xfe.0xa9.0xfe"]) {
      const url = `http://${host}/latest/meta-data/`;
      expect(await fetchUrl(url)).toEqual(
        refusedWith(url, `refused: 169.254.169.254 is a cloud metadata address in 169.254.0.0/16, ${NOT_ALLOWED}`),
      );
    }
  });

  test("a name resolving to the metadata address is refused, naming host, address and range", async () => {
    const resolve: Resolver = async () => ["169.254.169.254"];
    const url = "http://metadata.example/computeMetadata/v1/";
    expect(await fetchUrlWith({ resolve })(url)).toEqual(
      refusedWith(
        url,
        `refused: metadata.example resolves to 169.254.169.254, a cloud metadata address in 169.254.0.0/16, ${NOT_ALLOWED}`,
      ),
    );
  });

  test("other clouds' metadata endpoints are refused: Alibaba, Azure WireServer, Oracle legacy, ECS, AWS and GCP over IPv6", async () => {
    for (const host of [
      "100.100.100.200",
      "168.63.129.16",
      "192.0.0.192",
      "169.254.170.2",
      "[fd00:ec2::254]",
      "[fd20:ce::254]",
    ]) {
      expect(String((await fetchUrl(`http://${host}/`)).output.error)).toStartWith(
        `refused: ${host} is a cloud metadata address`,
      );
    }
  });

  test("a name allowed by name still cannot reach the metadata address or link-local", async () => {
    const resolve: Resolver = async (name) => (name === "metadata.example" ? ["169.254.169.254"] : ["fe80::1%eth0"]);
    const fetchUrl = fetchUrlWith({ resolve, allow: allow("metadata.example", "*.corp.example") });
    expect(String((await fetchUrl("http://metadata.example/")).output.error)).toStartWith(
      "refused: metadata.example resolves to 169.254.169.254, a cloud metadata address",
    );
    expect(String((await fetchUrl("http://scoped.corp.example/")).output.error)).toStartWith(
      "refused: scoped.corp.example resolves to fe80::1%eth0, a link-local address in fe80::/10",
    );
  });
});

describe("loopback, private and other special ranges", () => {
  test("loopback is refused by default in every form, and the service behind it is never contacted", async () => {
    const fetchUrl = fetchUrlWith();
    const before = hits.allowed.length;
    for (const host of [
      "127.0.0.1",
      "127.1",
      "0x7f000001",
      "2130706433",
      "[::ffff:127.0.0.1]",
      "[::127.0.0.1]",
      "[64:ff9b::127.0.0.1]",
      "[::1]",
      "localhost",
    ]) {
      const result = await fetchUrl(`http://${host}:${port}/secret`);
      expect(result.isError).toBe(true);
      expect(String(result.output.error)).toMatch(/^refused: .*a loopback address in (127\.0\.0\.0\/8|::1\/128)/);
    }
    expect(hits.allowed.length).toBe(before);
  });

  test("private, carrier-grade NAT, multicast, broadcast, unspecified and reserved addresses are refused", async () => {
    const fetchUrl = fetchUrlWith();
    const cases: Array<[string, string]> = [
      ["10.0.0.5", "a private address in 10.0.0.0/8"],
      ["172.20.1.1", "a private address in 172.16.0.0/12"],
      ["192.168.1.1", "a private address in 192.168.0.0/16"],
      ["[fd12::1]", "a private address in fc00::/7"],
      ["100.64.1.1", "a carrier-grade NAT (shared) address in 100.64.0.0/10"],
      ["224.0.0.251", "a multicast address in 224.0.0.0/4"],
      ["[ff02::1]", "a multicast address in ff00::/8"],
      ["255.255.255.255", "a broadcast address in 255.255.255.255/32"],
      ["0.0.0.0", "an unspecified (this-network) address in 0.0.0.0/8"],
      ["0", "an unspecified (this-network) address in 0.0.0.0/8"],
      ["[::]", "an unspecified (this-network) address in ::/128"],
      ["240.1.2.3", "a reserved address in 240.0.0.0/4"],
      ["192.0.2.1", "a documentation address in 192.0.2.0/24"],
      ["[fe80::1]", "a link-local address in fe80::/10"],
    ];
    for (const [host, what] of cases)
      expect(String((await fetchUrl(`http://${host}/`)).output.error)).toEndWith(`${what}, ${NOT_ALLOWED}`);
  });

  test("a name with one public and one private address is refused", async () => {
    const fetchUrl = fetchUrlWith({ resolve: async () => ["93.184.216.34", "10.0.0.5"] });
    expect(String((await fetchUrl("http://split.example/")).output.error)).toBe(
      `refused: split.example resolves to 10.0.0.5, a private address in 10.0.0.0/8, ${NOT_ALLOWED}`,
    );
  });

  test("a name resolving to an IPv4-mapped loopback address is refused", async () => {
    const fetchUrl = fetchUrlWith({ resolve: async () => ["::ffff:127.0.0.1"] });
    expect(String((await fetchUrl("http://mapped.example/")).output.error)).toBe(
      `refused: mapped.example resolves to ::ffff:7f00:1, which carries 127.0.0.1 (IPv4-mapped), a loopback address in 127.0.0.0/8, ${NOT_ALLOWED}`,
    );
  });
});

describe("redirects and rebinding", () => {
  test("a redirect from an allowed host to an IPv4-mapped metadata literal is refused", async () => {
    const result = await fetchUrlWith(onlyLoopbackOne)(bouncer("http://[::ffff:169.254.169.254]/latest/meta-data/"));
    expect(result.output.error).toBe(
      `refused: [::ffff:a9fe:a9fe] carries 169.254.169.254 (IPv4-mapped), a cloud metadata address in 169.254.0.0/16, ${NOT_ALLOWED}`,
    );
  });

  test("a redirect to an IPv4-mapped loopback address outside the allow list is refused and never contacted", async () => {
    const result = await fetchUrlWith(onlyLoopbackOne)(bouncer(`http://[::ffff:127.0.0.2]:${port}/`));
    expect(result.output.error).toBe(
      `refused: [::ffff:7f00:2] carries 127.0.0.2 (IPv4-mapped), a loopback address in 127.0.0.0/8, ${NOT_ALLOWED}`,
    );
    expect(hits.canary).toEqual([]);
  });

  test("a redirect to a non-http scheme is refused", async () => {
    expect((await fetchUrlWith(onlyLoopbackOne)(bouncer("file:///etc/passwd"))).output.error).toBe(
      "refused: a redirect to a file: URL",
    );
  });

  test("DNS rebinding: a name is looked up once and connected to at the checked address; the next hop's new answer is refused and never contacted", async () => {
    let lookups = 0;
    const resolve: Resolver = async () => [lookups++ === 0 ? "127.0.0.1" : "127.0.0.2"];
    const fetchUrl = fetchUrlWith({ ...onlyLoopbackOne, resolve });
    const first = await fetchUrl(`http://rebind.example:${port}/page`);
    expect(first).toMatchObject({
      output: { url: `http://rebind.example:${port}/page`, status: 200, body: "allowed /page" },
      isError: false,
    });
    expect(lookups).toBe(1);
    lookups = 0;
    const hopped = await fetchUrl(
      `http://rebind.example:${port}/bounce?to=${encodeURIComponent(`http://rebind.example:${port}/inner`)}`,
    );
    expect(hopped.output.error).toBe(
      `refused: rebind.example resolves to 127.0.0.2, a loopback address in 127.0.0.0/8, ${NOT_ALLOWED}`,
    );
    expect(lookups).toBe(2);
    expect(hits.allowed).toContain("/bounce");
    expect(hits.allowed).not.toContain("/inner");
    expect(hits.canary).toEqual([]);
  });
});

describe("credentials in URLs", () => {
  test("userinfo never appears in a result, a refusal or a transport error", async () => {
    const fetchUrl = fetchUrlWith({
      ...onlyLoopbackOne,
      resolve: async () => {
        throw new Error("ENOTFOUND");
      },
    });
    const served = await fetchUrl(`http://alice:s3cret@127.0.0.1:${port}/ok`);
    expect(served.output).toMatchObject({ url: `http://***@127.0.0.1:${port}/ok`, status: 200 });
    const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
    const closedPort = closed.port;
    closed.stop(true);
    for (const url of [
      "http://alice:s3cret@10.0.0.5/",
      "http://alice:s3cret@nowhere.example/",
      `http://alice:s3cret@127.0.0.1:${closedPort}/`,
    ]) {
      const result = await fetchUrl(url);
      expect(result.isError).toBe(true);
      expect(JSON.stringify(result.output)).not.toContain("s3cret");
      expect(result.output.url).toStartWith("http://***@");
    }
  });
});
