import { describe, expect, test } from "bun:test";
import { checkAllowedHost, hostAllowed, parseAllowedHosts } from "../../../src/surfaces/http/host-allowlist.ts";
import { SparError } from "../../../src/core/errors.ts";

function allowlist(entries: string[] = [], anyAddressLiteral = false) {
  const parsed = parseAllowedHosts(entries, "--attach-allowed-hosts", anyAddressLiteral);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
}

describe("hostAllowed", () => {
  test("loopback names and addresses in every canonical spelling pass", () => {
    for (const host of [
      "localhost",
      "localhost:7777",
      "LocalHost.",
      "x.localhost:1",
      "127.0.0.1",
      "127.255.0.9:80",
      "[::1]",
      "[::1]:7777",
      "[0:0:0:0:0:0:0:1]",
      "2130706433",
      "0x7f000001",
      "127.1",
      "[::ffff:127.0.0.1]",
    ]) {
      expect({ host, allowed: hostAllowed(host, allowlist()) }).toEqual({ host, allowed: true });
    }
  });

  test("other names and addresses do not, unless listed or (for a wide listener) an address literal", () => {
    for (const host of [
      "attacker.example",
      "localhost.attacker.example",
      "127.0.0.1.nip.io",
      "10.0.0.1",
      "[2001:db8::1]",
      "0.0.0.0",
      "[::]",
      "",
      "a b",
    ]) {
      expect({ host, allowed: hostAllowed(host, allowlist()) }).toEqual({ host, allowed: false });
    }
    expect(hostAllowed("10.0.0.1:9090", allowlist([], true))).toBe(true);
    expect(hostAllowed("[2001:db8::1]:9090", allowlist([], true))).toBe(true);
    expect(hostAllowed("attacker.example", allowlist([], true))).toBe(false);
  });

  test("listed names match exactly, *.domain entries match names under the domain only", () => {
    const list = allowlist(["Dash.Internal", "*.corp.example", "trailing.example."]);
    expect(hostAllowed("dash.internal:443", list)).toBe(true);
    expect(hostAllowed("DASH.INTERNAL", list)).toBe(true);
    expect(hostAllowed("trailing.example", list)).toBe(true);
    expect(hostAllowed("a.corp.example", list)).toBe(true);
    expect(hostAllowed("corp.example", list)).toBe(false);
    expect(hostAllowed("xcorp.example", list)).toBe(false);
    expect(hostAllowed("dash.internal.evil", list)).toBe(false);
  });
});

describe("parseAllowedHosts", () => {
  test("refuses schemes, ports, paths, bare wildcards and blanks inside names", () => {
    for (const bad of [
      "http://a.example",
      "a.example:80",
      "a.example/x",
      "*",
      "*.",
      "a b",
      "-a.example",
      "a..example",
    ]) {
      const parsed = parseAllowedHosts([bad], "--attach-allowed-hosts");
      expect({ bad, ok: parsed.ok }).toEqual({ bad, ok: false });
    }
    expect(parseAllowedHosts(["", " "], "x").ok).toBe(true);
  });
});

describe("checkAllowedHost", () => {
  const request = (host: string | undefined) =>
    new Request("http://127.0.0.1/x", host === undefined ? {} : { headers: { host } });

  test("no allowlist (a gated listener) checks nothing; no Host header is served", () => {
    expect(() => checkAllowedHost(request("attacker.example"), undefined)).not.toThrow();
    const bare = new Request("http://127.0.0.1/x");
    bare.headers.delete("host");
    expect(() => checkAllowedHost(bare, allowlist())).not.toThrow();
  });

  test("a refused Host is a misdirected SparError naming the setting", () => {
    try {
      checkAllowedHost(request("attacker.example:1"), allowlist());
      throw new Error("not refused");
    } catch (error) {
      expect(error).toBeInstanceOf(SparError);
      expect((error as SparError).code).toBe("misdirected");
      expect((error as SparError).message).toContain("--attach-allowed-hosts");
    }
  });
});
