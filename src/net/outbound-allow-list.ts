/**
 * The operator's outbound allow list (`--outbound-allow`, config key `outbound.allow`): IP
 * addresses and CIDR blocks, and host names (exact, or `*.example.com` for every name under
 * it), that the outbound guard lets a model- or caller-supplied URL reach although their
 * addresses lie in a range refused by default. A CIDR entry opens what it contains, also when an
 * IPv6 address carries it (`::ffff:10.0.0.1` is reached through `10.0.0.0/8`). A name entry opens
 * whatever that name resolves to except link-local and cloud metadata addresses: those only an
 * address entry opens, so a hijacked DNS record cannot hand out instance credentials. Pure.
 */
import { type AddressClass, classifyAddress, embeddedIpv4 } from "../core/address-ranges.ts";
import {
  type Cidr,
  type IpAddress,
  cidrContains,
  formatCidr,
  parseCidr,
  parseIpAddress,
  parseIpv4,
} from "../core/ip-address.ts";
import { type Result, err, ok } from "../core/result.ts";

export interface OutboundAllowList {
  /** Address blocks, as parsed. */
  blocks: readonly Cidr[];
  /** Exact host names, lowercase, without a trailing dot. */
  names: readonly string[];
  /** `*.example.com` entries as `.example.com`. */
  suffixes: readonly string[];
  /** Every entry in canonical text (what a log or /config may show). */
  entries: readonly string[];
}

export const EMPTY_ALLOW_LIST: OutboundAllowList = { blocks: [], names: [], suffixes: [], entries: [] };

const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

/** A lowercase host name without its trailing dot. */
export function normalizeHostName(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}

/** A DNS name whose last label is not a number (a host that ends in a number is an IPv4 address to the URL parser). */
function validHostName(name: string): boolean {
  const labels = name.split(".");
  if (name.length > 253 || !labels.every((label) => LABEL.test(label))) return false;
  return !/^(0x[0-9a-f]*|[0-9]+)$/.test(labels[labels.length - 1] as string);
}

function parseEntry(raw: string): Result<{ block: Cidr } | { name: string } | { suffix: string }> {
  const text = raw.trim();
  if (/^[0-9a-f:.[\]%/]+$/i.test(text) && (text.includes("/") || text.includes(":") || /^[0-9.]+$/.test(text))) {
    const parsed = parseCidr(text.replace(/^\[(.*)\](\/\d+)?$/, "$1$2"));
    return parsed.ok ? ok({ block: parsed.value }) : err(parsed.error);
  }
  const name = normalizeHostName(text);
  if (name.startsWith("*.") && validHostName(name.slice(2))) return ok({ suffix: name.slice(1) });
  if (validHostName(name)) return ok({ name });
  return err(
    `${JSON.stringify(raw)} is neither an IP address, a CIDR block nor a host name (a name may start with "*.")`,
  );
}

/** Parse entries; the first bad one is named in the error. Empty entries are skipped. */
export function parseOutboundAllowList(entries: readonly string[]): Result<OutboundAllowList> {
  const blocks: Cidr[] = [];
  const names: string[] = [];
  const suffixes: string[] = [];
  const canonical: string[] = [];
  for (const raw of entries) {
    if (raw.trim() === "") continue;
    const parsed = parseEntry(raw);
    if (!parsed.ok) return parsed;
    const entry = parsed.value;
    if ("block" in entry) {
      blocks.push(entry.block);
      canonical.push(formatCidr(entry.block));
    } else if ("name" in entry) {
      names.push(entry.name);
      canonical.push(entry.name);
    } else {
      suffixes.push(entry.suffix);
      canonical.push(`*${entry.suffix}`);
    }
  }
  return ok({ blocks, names, suffixes, entries: [...new Set(canonical)] });
}

function nameAllowed(list: OutboundAllowList, hostname: string): boolean {
  const name = normalizeHostName(hostname);
  return list.names.includes(name) || list.suffixes.some((suffix) => name.endsWith(suffix));
}

/**
 * Whether the list lets `hostname` (a name, or undefined for an address literal) reach an
 * address of this class.
 */
export function allowListPermits(
  list: OutboundAllowList,
  hostname: string | undefined,
  address: IpAddress,
  found: AddressClass,
): boolean {
  const carried = [address, ...embeddedIpv4(address).map((embedded) => embedded.ipv4)];
  if (list.blocks.some((block) => carried.some((candidate) => cidrContains(block, candidate)))) return true;
  if (hostname === undefined || found.kind === "metadata" || found.kind === "link-local") return false;
  return nameAllowed(list, hostname);
}

/**
 * The host of a URL the operator configured (a declared A2A agent, an alert target) as an
 * allow-list entry, so the outbound guard lets that URL reach a loopback or private address;
 * undefined for a link-local or cloud-metadata literal (never opened by configuration) or a URL
 * that does not parse.
 */
export function declaredHostEntry(text: string | undefined): string | undefined {
  if (text === undefined || !URL.canParse(text)) return undefined;
  const host = new URL(text).hostname;
  const bytes = parseIpv4(host);
  const literal = host.startsWith("[")
    ? parseIpAddress(host)
    : bytes === undefined
      ? undefined
      : { family: 4 as const, bytes };
  if (literal === undefined) return host;
  const kind = classifyAddress(literal).kind;
  return kind === "metadata" || kind === "link-local" ? undefined : host.replace(/^\[|\]$/g, "");
}
