/**
 * Where a listener tells clients it is (an agent card's `url`), never from an unchecked Host
 * (D333). A listener with an authentication gate serves any Host, and a card is public and
 * cacheable: a cache not keyed on Host would hand every client a card naming the attacker's host,
 * and the clients would send their bearer there. So the request's Host (or a trusted proxy's
 * `X-Forwarded-Host`) names the listener only when the listener vouches for it: a loopback name or
 * address, a name in `--attach-allowed-hosts`, or the listener's own bound address. Any other
 * Host gets the listener's own address (its bind host, or the machine's name when it binds every
 * interface). A configured public URL (the agent card's `external_url`) wins over all of this, at
 * the caller. Pure but for the listener's address, read when asked.
 */
import { hostname } from "node:os";
import { type HostAllowlist, hostAllowed } from "./host-allowlist.ts";
import { requestUrl, validHost } from "./request-url.ts";

export interface PublicOrigin {
  /** The names vouched for besides loopback ones (the listener's `--attach-allowed-hosts`). */
  vouched: HostAllowlist;
  /** The listener's own address once it listens: its bind host ("" for every interface) and port. */
  own(): { host: string; port: number } | undefined;
}

/** No names vouched for but loopback ones and no address known: an app handled in process. */
export const LOOPBACK_ONLY_ORIGIN: PublicOrigin = {
  vouched: { names: new Set(), suffixes: [], anyAddressLiteral: false, setting: "--attach-allowed-hosts" },
  own: () => undefined,
};

/** The first value of a comma-separated forwarded header. */
function firstValue(value: string | null): string | undefined {
  const first = value?.split(",")[0]?.trim();
  return first === undefined || first === "" ? undefined : first;
}

/** `host:port` of the listener itself, as a URL authority. */
function ownAuthority(origin: PublicOrigin): string | undefined {
  const own = origin.own();
  if (own === undefined) return undefined;
  const everyInterface = own.host === "" || own.host === "0.0.0.0" || own.host === "::";
  const host = everyInterface ? hostname() : own.host;
  return `${host.includes(":") ? `[${host}]` : host}:${own.port}`;
}

/** Whether the listener vouches for `authority`: loopback, an allowed name, or its own address. */
function vouchedFor(authority: string, origin: PublicOrigin): boolean {
  if (hostAllowed(authority, origin.vouched)) return true;
  const own = origin.own();
  if (own === undefined || own.host === "") return false;
  const bare = authority.replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
  return bare === own.host.replace(/^\[|\]$/g, "");
}

/**
 * The base URL (`scheme://host[:port]`) a client should use: the scheme from a trusted proxy's
 * `X-Forwarded-Proto` (http or https), else the request's; the host from a trusted proxy's
 * `X-Forwarded-Host`, else `Host`, when vouched for; else the listener's own address.
 */
export function publicBaseUrl(request: Request, origin: PublicOrigin, viaTrustedProxy = false): string {
  const url = requestUrl(request);
  const forwarded = (name: string) => (viaTrustedProxy ? firstValue(request.headers.get(name)) : undefined);
  const forwardedProto = forwarded("x-forwarded-proto")?.toLowerCase();
  const scheme =
    forwardedProto === "http" || forwardedProto === "https" ? forwardedProto : url.protocol.replace(/:$/, "");
  const proxied = validHost(forwarded("x-forwarded-host"));
  if (proxied !== undefined) return `${scheme}://${proxied}`;
  const named = validHost(request.headers.get("host"));
  // No Host at all: the URL Bun made from the connection (or an in-process request's own).
  if (named === undefined) return `${scheme}://${ownAuthority(origin) ?? url.host}`;
  // A trusted proxy's name is the operator's; a client's Host only when the listener vouches for it.
  return `${scheme}://${vouchedFor(named, origin) ? named : (ownAuthority(origin) ?? "localhost")}`;
}
