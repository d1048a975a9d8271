/**
 * Address parsing to bytes (core/ip-address.ts): every IPv4 form the WHATWG URL parser accepts
 * (checked against `new URL()` itself), IPv6 with compression, dotted tails, brackets and zone
 * ids, RFC 5952 formatting, and CIDR blocks with their typo guard.
 */
import { describe, expect, test } from "bun:test";
import { cidrContains, formatIpAddress, parseCidr, parseIpAddress, parseIpv4 } from "../../../src/core/ip-address.ts";

const bytesOf = (text: string) => {
  const parsed = parseIpAddress(text);
  return parsed === undefined ? undefined : Array.from(parsed.bytes);
};
const canonical = (text: string) => {
  const parsed = parseIpAddress(text);
  return parsed === undefined ? undefined : formatIpAddress(parsed);
};

describe("IPv4", () => {
  test("decimal, hex, octal, short and trailing-dot forms all read as 169.254.169.254", () => {
    for (const form of [
      "169.254.169.254",
      "2852039166",
      "0xa9fea9fe",
      "0XA9FEA9FE",
      "0251.0376.0251.0376",
      "169.254.43518",
      "169.16689662",
      "0xa9.0xfe.0xa9.0xfe",
      "169.254.169.254.",
    ]) {
      expect(bytesOf(form)).toEqual([169, 254, 169, 254]);
    }
  });

  test("agrees with the URL parser on what it accepts and what each form means", () => {
    const forms = [
      "127.1",
      "0x7f.1",
      "0",
      "0x",
      "010.0.0.1",
      "4294967295",
      "4294967296",
      "1.2.3.256",
      "1.2.3.08",
      "1..2",
      "1.2.3.4.5",
      "0x1g",
      "example.com",
      "1.2.3.4.",
      "08",
    ];
    for (const form of forms) {
      const viaUrl = URL.canParse(`http://${form}/`) ? new URL(`http://${form}/`).hostname : undefined;
      const ours = parseIpv4(form);
      const oursText = ours === undefined ? undefined : Array.from(ours).join(".");
      if (viaUrl !== undefined && /^[0-9.]+$/.test(viaUrl)) expect(oursText).toBe(viaUrl);
      else expect(oursText).toBeUndefined();
    }
  });

  test("not an address: names, empty parts, out-of-range numbers", () => {
    for (const text of ["", "a.b.c.d", "1.2.3.4.5", "256.1.1.1", "1.2.3.4294967296", "1..2.3", "-1.2.3.4"])
      expect(bytesOf(text)).toBeUndefined();
  });
});

describe("IPv6", () => {
  test("compression, dotted IPv4 tails, brackets and case", () => {
    expect(canonical("::ffff:169.254.169.254")).toBe("::ffff:a9fe:a9fe");
    expect(canonical("[::FFFF:A9FE:A9FE]")).toBe("::ffff:a9fe:a9fe");
    expect(canonical("::169.254.169.254")).toBe("::a9fe:a9fe");
    expect(canonical("64:ff9b::169.254.169.254")).toBe("64:ff9b::a9fe:a9fe");
    expect(canonical("2001:0db8:0000:0000:0000:0000:0000:0001")).toBe("2001:db8::1");
    expect(canonical("1:0:0:2:0:0:0:3")).toBe("1:0:0:2::3");
    expect(canonical("1:2:3:4:5:6:7::")).toBe("1:2:3:4:5:6:7:0");
    expect(canonical("::")).toBe("::");
    expect(canonical("::1")).toBe("::1");
    expect(bytesOf("::ffff:127.0.0.1")?.slice(10)).toEqual([255, 255, 127, 0, 0, 1]);
  });

  test("formatting matches the URL parser's canonical host", () => {
    for (const text of [
      "::ffff:169.254.169.254",
      "fe80::1",
      "2001:db8:0:0:1:0:0:1",
      "fd00:ec2::254",
      "0:0:0:0:0:0:0:1",
      "1::",
    ]) {
      expect(`[${canonical(text)}]`).toBe(new URL(`http://[${text}]/`).hostname);
    }
  });

  test("zone ids are kept apart from the bytes, also percent-encoded", () => {
    expect(parseIpAddress("fe80::1%eth0")).toEqual({
      family: 6,
      bytes: parseIpAddress("fe80::1")?.bytes as Uint8Array,
      zone: "eth0",
    });
    expect(parseIpAddress("[fe80::1%25eth0]")).toMatchObject({ zone: "eth0" });
    expect(canonical("fe80::1%eth0")).toBe("fe80::1%eth0");
    expect(parseIpAddress("fe80::1%")).toBeUndefined();
    expect(parseIpAddress("fe80::1%a/b")).toBeUndefined();
  });

  test("malformed text is not an address", () => {
    for (const text of [
      "1::2::3",
      ":::",
      "12345::",
      "1:2:3:4:5:6:7:8:9",
      "1:2:3:4:5:6:7",
      "::ffff:1.2.3",
      "::ffff:01.2.3.4",
      "::1.2.3.4:5",
      "g::1",
      "1:2:3:4:5:6:7:8::",
    ]) {
      expect(parseIpAddress(text)).toBeUndefined();
    }
  });
});

describe("CIDR blocks", () => {
  test("parse, contain, and single addresses as /32 and /128", () => {
    const block = parseCidr("10.0.0.0/8");
    if (!block.ok) throw new Error(block.error);
    expect(cidrContains(block.value, parseIpAddress("10.200.3.4") as never)).toBe(true);
    expect(cidrContains(block.value, parseIpAddress("11.0.0.1") as never)).toBe(false);
    expect(cidrContains(block.value, parseIpAddress("::ffff:10.0.0.1") as never)).toBe(false);
    expect(parseCidr("::1")).toMatchObject({ ok: true, value: { family: 6, prefix: 128 } });
    expect(parseCidr("192.168.1.7")).toMatchObject({ ok: true, value: { family: 4, prefix: 32 } });
    const odd = parseCidr("172.16.0.0/12");
    if (!odd.ok) throw new Error(odd.error);
    expect(cidrContains(odd.value, parseIpAddress("172.31.255.255") as never)).toBe(true);
    expect(cidrContains(odd.value, parseIpAddress("172.32.0.0") as never)).toBe(false);
  });

  test("bits past the prefix, bad lengths and garbage are refused with the entry named", () => {
    expect(parseCidr("10.0.0.1/8")).toEqual({
      ok: false,
      error: '"10.0.0.1/8" has bits set past the /8 prefix (did you mean 10.0.0.0/8?)',
    });
    expect(parseCidr("fd00::1/8")).toEqual({
      ok: false,
      error: '"fd00::1/8" has bits set past the /8 prefix (did you mean fd00::/8?)',
    });
    expect(parseCidr("10.0.0.0/33")).toEqual({ ok: false, error: '"10.0.0.0/33": the prefix length must be 0 to 32' });
    expect(parseCidr("10.0.0.0/-1").ok).toBe(false);
    expect(parseCidr("10.0.0.0/8/9").ok).toBe(false);
    expect(parseCidr("fe80::1%eth0/64").ok).toBe(false);
    expect(parseCidr("example.com/8")).toEqual({
      ok: false,
      error: '"example.com/8" is not an IP address or CIDR block',
    });
  });
});
