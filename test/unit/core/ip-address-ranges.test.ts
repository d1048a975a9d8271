/**
 * Address classification (core/address-ranges.ts): each special-purpose range, the exact cloud
 * metadata addresses, and IPv6 addresses that carry an IPv4 one (mapped, compatible, SIIT,
 * NAT64 and local-use NAT64, 6to4, Teredo with its XOR-ed client) classified as that IPv4.
 */
import { describe, expect, test } from "bun:test";
import { classifyAddress, embeddedIpv4, METADATA_ADDRESSES } from "../../../src/core/address-ranges.ts";
import { formatIpAddress, type IpAddress, parseIpAddress } from "../../../src/core/ip-address.ts";

const address = (text: string): IpAddress => {
  const parsed = parseIpAddress(text);
  if (parsed === undefined) throw new Error(`not an address: ${text}`);
  return parsed;
};
const kindOf = (text: string) => classifyAddress(address(text)).kind;

describe("IPv4 ranges", () => {
  test.each([
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["10.1.2.3", "private"],
    ["100.64.0.1", "shared"],
    ["100.127.255.255", "shared"],
    ["100.128.0.0", "public"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["169.254.0.1", "link-local"],
    ["172.16.0.1", "private"],
    ["172.31.9.9", "private"],
    ["172.32.0.1", "public"],
    ["192.0.0.8", "reserved"],
    ["192.0.2.7", "documentation"],
    ["192.88.99.1", "reserved"],
    ["192.168.1.1", "private"],
    ["198.18.0.1", "benchmarking"],
    ["198.51.100.1", "documentation"],
    ["203.0.113.5", "documentation"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "broadcast"],
    ["8.8.8.8", "public"],
    ["93.184.216.34", "public"],
  ])("%s is %s", (text, kind) => {
    expect(kindOf(text)).toBe(kind as never);
  });
});

describe("IPv6 ranges", () => {
  test.each([
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["fe80::1", "link-local"],
    ["febf::1", "link-local"],
    ["fec0::1", "private"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["ff02::1", "multicast"],
    ["100::1", "reserved"],
    ["2001:db8::1", "documentation"],
    ["3fff::1", "documentation"],
    ["2001:2::1", "benchmarking"],
    ["2001:10::1", "reserved"],
    ["4000::1", "reserved"],
    ["2606:4700::1111", "public"],
    ["2a00:1450:4001::200e", "public"],
  ])("%s is %s", (text, kind) => {
    expect(kindOf(text)).toBe(kind as never);
  });
});

test("every listed metadata address is metadata, named with the range it lies in", () => {
  for (const text of METADATA_ADDRESSES) expect(kindOf(text)).toBe("metadata");
  expect(classifyAddress(address("169.254.169.254"))).toEqual({
    kind: "metadata",
    label: "a cloud metadata address",
    range: "169.254.0.0/16",
  });
  expect(classifyAddress(address("168.63.129.16"))).toEqual({
    kind: "metadata",
    label: "a cloud metadata address",
    range: "168.63.129.16/32",
  });
  expect(classifyAddress(address("fd00:ec2::254"))).toMatchObject({ kind: "metadata", range: "fc00::/7" });
  expect(kindOf("169.254.169.253")).toBe("link-local");
});

describe("IPv6 addresses that carry an IPv4 address are classified like it", () => {
  test.each([
    ["::ffff:169.254.169.254", "IPv4-mapped", "169.254.169.254", "metadata"],
    ["::ffff:a9fe:a9fe", "IPv4-mapped", "169.254.169.254", "metadata"],
    ["::169.254.169.254", "IPv4-compatible", "169.254.169.254", "metadata"],
    ["::ffff:0:127.0.0.1", "IPv4-translated (SIIT)", "127.0.0.1", "loopback"],
    ["64:ff9b::10.0.0.1", "NAT64", "10.0.0.1", "private"],
    ["64:ff9b::169.254.169.254", "NAT64", "169.254.169.254", "metadata"],
    ["64:ff9b:1::a9fe:a9fe", "local-use NAT64", "169.254.169.254", "metadata"],
    ["64:ff9b:1:7f00:0:100:808:808", "local-use NAT64 (/48 layout)", "127.0.0.1", "loopback"],
    ["2002:a9fe:a9fe::1", "6to4", "169.254.169.254", "metadata"],
    ["2002:c0a8:101::", "6to4", "192.168.1.1", "private"],
    ["2001:0:4136:e378:8000:63bf:5601:5601", "Teredo client", "169.254.169.254", "metadata"],
    ["2001:0:7f00:1::", "Teredo server", "127.0.0.1", "loopback"],
  ])("%s carries %s %s", (text, form, ipv4, kind) => {
    const found = classifyAddress(address(text));
    expect(found.kind).toBe(kind as never);
    expect(found.embedded?.form).toBe(form);
    expect(formatIpAddress(found.embedded?.ipv4 as IpAddress)).toBe(ipv4);
  });

  test("a carried public address is public, also in prefixes that are otherwise outside global unicast", () => {
    for (const text of [
      "::ffff:8.8.8.8",
      "64:ff9b::8.8.8.8",
      "2002:808:808::1",
      "2001:0:4136:e378:8000:63bf:f7f7:f7f7",
    ])
      expect(kindOf(text)).toBe("public");
  });

  test("`::` and `::1` carry nothing; IPv4 carries nothing", () => {
    expect(embeddedIpv4(address("::"))).toEqual([]);
    expect(embeddedIpv4(address("::1"))).toEqual([]);
    expect(embeddedIpv4(address("10.0.0.1"))).toEqual([]);
    expect(kindOf("::2")).toBe("unspecified");
  });

  test("a scoped address is classified by its bytes", () => {
    expect(kindOf("fe80::1%eth0")).toBe("link-local");
  });
});
