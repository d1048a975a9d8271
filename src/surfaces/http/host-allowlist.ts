/**
 * The DNS-rebinding guard of listeners without an authentication gate. A web page whose name
 * rebinds to 127.0.0.1 reaches a loopback listener from the victim's browser, and since its
 * Origin then equals the Host, the CSRF check passes; the only thing the browser cannot forge is
 * the Host, which still names the attacker's domain. So an ungated listener serves only requests
 * whose Host is a loopback name (`localhost`, `*.localhost`) or address (127.0.0.0/8, ::1), an IP
 * address literal when the listener is also reachable from other hosts (a page cannot be served
 * from an address literal that is this listener), or a name the operator listed. Requests with no
 * Host at all (HTTP/1.0 probes; browsers always send one) are served. Owns no other header rule.
 */
import { SparError } from "../../core/errors.ts";
import { type Result, err, ok } from "../../core/result.ts";

export interface HostAllowlist {
  /** Lower-case names served besides the loopback ones (exact match; port ignored). */
  names: ReadonlySet<string>;
  /** Lower-case suffixes from `*.example.com` entries, each starting with a dot. */
  suffixes: readonly string[];
  /** Also serve any IPv4 or IPv6 address literal (a listener bound to a non-loopback address). */
  anyAddressLiteral: boolean;
  /** Where the refusal tells the operator to add a name (the flag and config key). */
  setting: string;
}

const NAME = /^(?:\*\.)?[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$/;

/** Parse `--attach-allowed-hosts` entries: host names, or `*.suffix` for every name under one. */
export function parseAllowedHosts(
  entries: readonly string[],
  setting: string,
  anyAddressLiteral = false,
): Result<HostAllowlist> {
  const names = new Set<string>();
  const suffixes: string[] = [];
  for (const raw of entries) {
    const entry = raw.trim().toLowerCase();
    if (entry === "") continue;
    if (!NAME.test(entry) || entry.length > 253) {
      return err(
        `${setting}: ${JSON.stringify(raw)} is not a host name or *.domain (no ports, schemes or addresses: loopback addresses are always served)`,
      );
    }
    const bare = entry.replace(/\.$/, "");
    if (bare.startsWith("*.")) suffixes.push(bare.slice(1));
    else names.add(bare);
  }
  return ok({ names, suffixes, anyAddressLiteral, setting });
}

/** The host part of a Host header value, lower-case, without port or trailing dot. */
function hostPart(header: string): string {
  const lower = header.toLowerCase();
  if (lower.startsWith("[")) {
    const close = lower.indexOf("]");
    return close < 0 ? lower : lower.slice(0, close + 1);
  }
  const colon = lower.indexOf(":");
  return (colon < 0 ? lower : lower.slice(0, colon)).replace(/\.$/, "");
}

const DOTTED_IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** Loopback by its canonical form (the URL parser turns 0x7f.1, 2130706433 and [::ffff:7f00:1] into these). */
function isLoopbackCanonical(host: string): boolean {
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (host === "[::1]") return true;
  const v4 = DOTTED_IPV4.exec(host);
  if (v4) return v4[1] === "127";
  return /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(host);
}

/** The canonical host a URL parser gives, or undefined when it is not a valid host at all. */
function canonicalHost(host: string): string | undefined {
  try {
    return new URL(`http://${host}/`).hostname;
  } catch {
    return undefined;
  }
}

function isAddressLiteral(host: string): boolean {
  return host.startsWith("[") || DOTTED_IPV4.test(host);
}

/** Whether a listener with this allowlist serves a request carrying this Host value. */
export function hostAllowed(header: string, allowlist: HostAllowlist): boolean {
  const host = hostPart(header);
  // Fast path for what local clients send.
  if (host === "127.0.0.1" || host === "localhost" || host === "[::1]") return true;
  if (allowlist.names.has(host)) return true;
  const canonical = canonicalHost(host);
  if (canonical === undefined) return false;
  if (isLoopbackCanonical(canonical)) return true;
  if (allowlist.anyAddressLiteral && isAddressLiteral(canonical)) return true;
  if (allowlist.names.has(canonical)) return true;
  return allowlist.suffixes.some((suffix) => canonical.endsWith(suffix) && canonical.length > suffix.length);
}

/**
 * Refuse (421 Misdirected Request) a request whose Host this ungated listener does not serve.
 * `allowlist` undefined: the listener has an authentication gate and serves any valid Host.
 */
export function checkAllowedHost(request: Request, allowlist: HostAllowlist | undefined): void {
  if (allowlist === undefined) return;
  const host = request.headers.get("host");
  if (host === null || hostAllowed(host, allowlist)) return;
  throw new SparError(
    "misdirected",
    `Host ${JSON.stringify(host.slice(0, 200))} is not served here: a listener without an authentication gate answers only loopback names and addresses (a web page could rebind its own name to this address); list the name in ${allowlist.setting}, or give the listener a token`,
  );
}
