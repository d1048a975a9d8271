/**
 * What an IP address is: public, or one of the special-purpose ranges an outbound request a
 * model or a remote caller chose must not reach by default (loopback, private, link-local, cloud
 * metadata, carrier-grade NAT, multicast, broadcast, unspecified, documentation, reserved). An
 * IPv6 address that carries an IPv4 address (IPv4-mapped, IPv4-compatible, SIIT, NAT64, 6to4,
 * Teredo) is classified like the IPv4 address it carries. Pure; the policy that acts on the
 * answer is src/net/outbound-guard.ts.
 */
import { type Cidr, type IpAddress, cidr, cidrContains, formatCidr, formatIpAddress } from "./ip-address.ts";

export type AddressKind =
  | "public"
  | "unspecified"
  | "loopback"
  | "private"
  | "shared"
  | "link-local"
  | "metadata"
  | "multicast"
  | "broadcast"
  | "documentation"
  | "benchmarking"
  | "reserved";

export interface AddressClass {
  kind: AddressKind;
  /** "a link-local address": reads after the address in a refusal. */
  label: string;
  /** The block the address lies in (`169.254.0.0/16`; a metadata address's enclosing range); absent for a public address. */
  range?: string;
  /** The IPv4 address an IPv6 address carries, and how, when that decided the class. */
  embedded?: EmbeddedIpv4;
}

export interface EmbeddedIpv4 {
  /** "IPv4-mapped", "NAT64", "6to4", "Teredo client", ... */
  form: string;
  ipv4: IpAddress;
}

const LABELS: Record<AddressKind, string> = {
  public: "a public address",
  unspecified: "an unspecified (this-network) address",
  loopback: "a loopback address",
  private: "a private address",
  shared: "a carrier-grade NAT (shared) address",
  "link-local": "a link-local address",
  metadata: "a cloud metadata address",
  multicast: "a multicast address",
  broadcast: "a broadcast address",
  documentation: "a documentation address",
  benchmarking: "a benchmarking address",
  reserved: "a reserved address",
};

/**
 * Instance metadata and credential endpoints, matched exactly before any range: AWS/GCP/Azure/
 * Oracle/OpenStack/DigitalOcean IMDS, AWS ECS task credentials, EKS Pod Identity (v4 and v6),
 * Alibaba, Azure WireServer (a public address), Oracle's legacy endpoint, AWS and GCP over IPv6.
 */
export const METADATA_ADDRESSES: readonly string[] = [
  "169.254.169.254",
  "169.254.170.2",
  "169.254.170.23",
  "100.100.100.200",
  "168.63.129.16",
  "192.0.0.192",
  "fd00:ec2::254",
  "fd00:ec2::23",
  "fd20:ce::254",
];
const METADATA: readonly Cidr[] = METADATA_ADDRESSES.map((text) => cidr(text));

type RangeRule = readonly [string, AddressKind];

const IPV4_RANGES: readonly (readonly [Cidr, AddressKind])[] = (
  [
    ["0.0.0.0/8", "unspecified"],
    ["10.0.0.0/8", "private"],
    ["100.64.0.0/10", "shared"],
    ["127.0.0.0/8", "loopback"],
    ["169.254.0.0/16", "link-local"],
    ["172.16.0.0/12", "private"],
    ["192.0.0.0/24", "reserved"],
    ["192.0.2.0/24", "documentation"],
    ["192.88.99.0/24", "reserved"],
    ["192.168.0.0/16", "private"],
    ["198.18.0.0/15", "benchmarking"],
    ["198.51.100.0/24", "documentation"],
    ["203.0.113.0/24", "documentation"],
    ["224.0.0.0/4", "multicast"],
    ["255.255.255.255/32", "broadcast"],
    ["240.0.0.0/4", "reserved"],
  ] satisfies RangeRule[]
).map(([text, kind]) => [cidr(text), kind] as const);

const IPV6_RANGES: readonly (readonly [Cidr, AddressKind])[] = (
  [
    ["100::/64", "reserved"],
    ["2001:db8::/32", "documentation"],
    ["3fff::/20", "documentation"],
    ["2001:2::/48", "benchmarking"],
    ["2001:10::/28", "reserved"],
    ["2001:20::/28", "reserved"],
    ["fc00::/7", "private"],
    ["fe80::/10", "link-local"],
    ["fec0::/10", "private"],
    ["ff00::/8", "multicast"],
  ] satisfies RangeRule[]
).map(([text, kind]) => [cidr(text), kind] as const);

const GLOBAL_UNICAST = cidr("2000::/3");
const UNSPECIFIED_V6 = cidr("::/128");
const LOOPBACK_V6 = cidr("::1/128");

/** IPv6 prefixes that carry an IPv4 address, and where its four bytes sit (XOR-ed for a Teredo client). */
const EMBEDDINGS: readonly { block: Cidr; form: string; at: number; xor?: boolean }[] = [
  { block: cidr("::ffff:0:0/96"), form: "IPv4-mapped", at: 12 },
  { block: cidr("::/96"), form: "IPv4-compatible", at: 12 },
  { block: cidr("::ffff:0:0:0/96"), form: "IPv4-translated (SIIT)", at: 12 },
  { block: cidr("64:ff9b::/96"), form: "NAT64", at: 12 },
  { block: cidr("64:ff9b:1::/48"), form: "local-use NAT64", at: 12 },
  { block: cidr("2002::/16"), form: "6to4", at: 2 },
  { block: cidr("2001::/32"), form: "Teredo server", at: 4 },
  { block: cidr("2001::/32"), form: "Teredo client", at: 12, xor: true },
];

/** The RFC 6052 /48 layout of a local-use NAT64 address: bytes 6-7 and 9-10 (byte 8 is the u-octet). */
function localNat64Slash48(bytes: Uint8Array): IpAddress {
  return {
    family: 4,
    bytes: new Uint8Array([bytes[6] as number, bytes[7] as number, bytes[9] as number, bytes[10] as number]),
  };
}

/** Every IPv4 address this IPv6 address carries (none for IPv4, or for `::` and `::1`). */
export function embeddedIpv4(address: IpAddress): EmbeddedIpv4[] {
  if (address.family === 4 || cidrContains(UNSPECIFIED_V6, address) || cidrContains(LOOPBACK_V6, address)) return [];
  const found: EmbeddedIpv4[] = [];
  for (const embedding of EMBEDDINGS) {
    if (!cidrContains(embedding.block, address)) continue;
    const slice = address.bytes.slice(embedding.at, embedding.at + 4);
    found.push({
      form: embedding.form,
      ipv4: { family: 4, bytes: embedding.xor ? slice.map((byte) => byte ^ 0xff) : slice },
    });
    if (embedding.form === "local-use NAT64")
      found.push({ form: "local-use NAT64 (/48 layout)", ipv4: localNat64Slash48(address.bytes) });
  }
  return found;
}

function classFor(kind: AddressKind, range?: Cidr | string): AddressClass {
  const answer: AddressClass = { kind, label: LABELS[kind] };
  if (range !== undefined) answer.range = typeof range === "string" ? range : formatCidr(range);
  return answer;
}

function classifyIpv4(address: IpAddress): AddressClass {
  const rule = IPV4_RANGES.find(([block]) => cidrContains(block, address));
  if (METADATA.some((block) => cidrContains(block, address)))
    return classFor("metadata", rule?.[0] ?? `${formatIpAddress(address)}/32`);
  return rule ? classFor(rule[1], rule[0]) : classFor("public");
}

/** The class of an address; for an IPv6 address carrying an IPv4 one, the IPv4 address's class. */
export function classifyAddress(address: IpAddress): AddressClass {
  if (address.family === 4) return classifyIpv4(address);
  const plain: IpAddress = { family: 6, bytes: address.bytes };
  if (METADATA.some((block) => cidrContains(block, plain)))
    return classFor(
      "metadata",
      IPV6_RANGES.find(([block]) => cidrContains(block, plain))?.[0] ?? `${formatIpAddress(plain)}/128`,
    );
  if (cidrContains(UNSPECIFIED_V6, plain)) return classFor("unspecified", UNSPECIFIED_V6);
  if (cidrContains(LOOPBACK_V6, plain)) return classFor("loopback", LOOPBACK_V6);
  const carried = embeddedIpv4(plain);
  for (const embedded of carried) {
    const inner = classifyIpv4(embedded.ipv4);
    if (inner.kind !== "public") return { ...inner, embedded };
  }
  if (carried.length > 0) return classFor("public");
  const rule = IPV6_RANGES.find(([block]) => cidrContains(block, plain));
  if (rule) return classFor(rule[1], rule[0]);
  return cidrContains(GLOBAL_UNICAST, plain) ? classFor("public") : classFor("reserved", "outside 2000::/3");
}
