/**
 * The outbound allow list (src/net/outbound-allow-list.ts): entry forms and their canonical text,
 * malformed entries named, CIDR entries opening carried IPv4 too, names and `*.` subtrees, and
 * name entries that never open link-local or metadata addresses.
 */
import { describe, expect, test } from "bun:test";
import { classifyAddress } from "../../../src/core/address-ranges.ts";
import { type IpAddress, parseIpAddress } from "../../../src/core/ip-address.ts";
import { allowListPermits, parseOutboundAllowList } from "../../../src/net/outbound-allow-list.ts";

function list(...entries: string[]) {
  const parsed = parseOutboundAllowList(entries);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
}

const permits = (entries: string[], hostname: string | undefined, text: string) => {
  const address = parseIpAddress(text) as IpAddress;
  return allowListPermits(list(...entries), hostname, address, classifyAddress(address));
};

describe("parsing", () => {
  test("addresses, blocks, bracketed IPv6, names and subtrees in canonical form; blanks and duplicates dropped", () => {
    expect(
      list(
        "10.0.0.0/8",
        " Internal.Example. ",
        "*.corp.example",
        "[::1]",
        "[fd00::]/8",
        "",
        "192.168.1.5",
        "10.0.0.0/8",
      ).entries,
    ).toEqual(["10.0.0.0/8", "internal.example", "*.corp.example", "::1/128", "fd00::/8", "192.168.1.5/32"]);
  });

  test("a malformed entry is refused by name", () => {
    expect(parseOutboundAllowList(["10.0.0.0/8", "10.0.0.1/8"])).toEqual({
      ok: false,
      error: '"10.0.0.1/8" has bits set past the /8 prefix (did you mean 10.0.0.0/8?)',
    });
    expect(parseOutboundAllowList(["10.0.0.300"])).toEqual({
      ok: false,
      error: '"10.0.0.300" is not an IP address or CIDR block',
    });
    expect(parseOutboundAllowList(["::1/129"])).toEqual({
      ok: false,
      error: '"::1/129": the prefix length must be 0 to 128',
    });
    for (const bad of [
      "http://internal.example",
      "a..b",
      "-x.example",
      "under_score?.example",
      "*",
      "*.",
      "host.123",
      `${"x".repeat(64)}.example`,
    ]) {
      const parsed = parseOutboundAllowList([bad]);
      expect(parsed).toEqual({
        ok: false,
        error: `${JSON.stringify(bad)} is neither an IP address, a CIDR block nor a host name (a name may start with "*.")`,
      });
    }
  });
});

describe("what an entry opens", () => {
  test("a block opens what it contains, also carried in IPv6; nothing else", () => {
    expect(permits(["10.0.0.0/8"], undefined, "10.9.8.7")).toBe(true);
    expect(permits(["10.0.0.0/8"], "app.example", "::ffff:10.9.8.7")).toBe(true);
    expect(permits(["10.0.0.0/8"], undefined, "64:ff9b::a09:807")).toBe(true);
    expect(permits(["10.0.0.0/8"], undefined, "11.0.0.1")).toBe(false);
    expect(permits(["127.0.0.1"], undefined, "127.0.0.2")).toBe(false);
  });

  test("a block may open a metadata address; only a block can", () => {
    expect(permits(["169.254.169.254"], undefined, "169.254.169.254")).toBe(true);
    expect(permits(["metadata.example"], "metadata.example", "169.254.169.254")).toBe(false);
    expect(permits(["*.example"], "x.example", "fe80::1")).toBe(false);
    expect(permits(["internal.example"], "internal.example", "fd00:ec2::254")).toBe(false);
  });

  test("a name opens its own addresses; a subtree opens names under it, not itself; literals are not names", () => {
    expect(permits(["internal.example"], "INTERNAL.example.", "10.1.1.1")).toBe(true);
    expect(permits(["internal.example"], "other.example", "10.1.1.1")).toBe(false);
    expect(permits(["*.corp.example"], "a.b.corp.example", "192.168.0.9")).toBe(true);
    expect(permits(["*.corp.example"], "corp.example", "192.168.0.9")).toBe(false);
    expect(permits(["*.corp.example"], "evilcorp.example", "192.168.0.9")).toBe(false);
    expect(permits(["internal.example"], undefined, "10.1.1.1")).toBe(false);
  });
});
