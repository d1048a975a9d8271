/**
 * IP addresses as bytes: parsing every textual form a URL host or a resolver answer can take
 * (IPv4 dotted, and the decimal, hex, octal and short forms the WHATWG URL parser accepts; IPv6
 * with `::`, an embedded dotted IPv4 tail, brackets and a zone id), canonical formatting, and
 * CIDR blocks. Decisions about what an address may reach live in address-ranges.ts. Pure.
 */

export type IpAddress = { family: 4; bytes: Uint8Array } | { family: 6; bytes: Uint8Array; zone?: string };

/** A block of addresses: `prefix` leading bits of `bytes` are fixed. */
export interface Cidr {
  family: 4 | 6;
  bytes: Uint8Array;
  prefix: number;
}

/** One IPv4 part as the WHATWG host parser reads it: `0x` hex, leading-zero octal, else decimal. */
function ipv4Number(part: string): number | undefined {
  if (part === "") return undefined;
  let digits = part;
  let radix = 10;
  if (/^0x/i.test(digits)) {
    digits = digits.slice(2);
    radix = 16;
  } else if (digits.length > 1 && digits.startsWith("0")) {
    digits = digits.slice(1);
    radix = 8;
  }
  if (digits === "") return 0;
  const pattern = radix === 16 ? /^[0-9a-f]+$/i : radix === 8 ? /^[0-7]+$/ : /^[0-9]+$/;
  if (!pattern.test(digits)) return undefined;
  const value = Number.parseInt(digits, radix);
  return Number.isSafeInteger(value) ? value : undefined;
}

/**
 * An IPv4 address in any form `new URL()` accepts as one: `169.254.169.254`, `2852039166`,
 * `0xa9fea9fe`, `0251.0376.0251.0376`, `169.254.43518`, `127.1`, a trailing dot.
 */
export function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split(".");
  if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
  if (parts.length === 0 || parts.length > 4) return undefined;
  const numbers: number[] = [];
  for (const part of parts) {
    const value = ipv4Number(part);
    if (value === undefined) return undefined;
    numbers.push(value);
  }
  const last = numbers.pop() as number;
  if (numbers.some((value) => value > 255) || last >= 256 ** (4 - numbers.length)) return undefined;
  let whole = last;
  for (const [index, value] of numbers.entries()) whole += value * 256 ** (3 - index);
  return new Uint8Array([(whole >>> 24) & 255, (whole >>> 16) & 255, (whole >>> 8) & 255, whole & 255]);
}

/** Strict dotted quad (the tail of an IPv6 address): four decimal parts, no leading zeros. */
function dottedQuad(text: string): number[] | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((part) => /^(0|[1-9][0-9]{0,2})$/.test(part) && Number(part) <= 255))
    return undefined;
  return parts.map(Number);
}

/** Hex groups of one side of `::` (the right side may end in a dotted IPv4). */
function ipv6Groups(text: string, allowTail: boolean): number[] | undefined {
  if (text === "") return [];
  const pieces = text.split(":");
  const groups: number[] = [];
  for (const [index, piece] of pieces.entries()) {
    if (allowTail && index === pieces.length - 1 && piece.includes(".")) {
      const quad = dottedQuad(piece);
      if (quad === undefined) return undefined;
      groups.push(((quad[0] as number) << 8) | (quad[1] as number), ((quad[2] as number) << 8) | (quad[3] as number));
    } else if (/^[0-9a-f]{1,4}$/i.test(piece)) {
      groups.push(Number.parseInt(piece, 16));
    } else {
      return undefined;
    }
  }
  return groups;
}

/** An IPv6 address: `::` compression, a dotted IPv4 tail, optional brackets and `%zone`. */
export function parseIpv6(text: string): { bytes: Uint8Array; zone?: string } | undefined {
  let body = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  let zone: string | undefined;
  const percent = body.indexOf("%");
  if (percent >= 0) {
    zone = decodeZone(body.slice(percent + 1));
    if (zone === undefined) return undefined;
    body = body.slice(0, percent);
  }
  const halves = body.split("::");
  if (halves.length > 2) return undefined;
  const compressed = halves.length === 2;
  const left = ipv6Groups(halves[0] as string, !compressed);
  const right = compressed ? ipv6Groups(halves[1] as string, true) : [];
  if (left === undefined || right === undefined) return undefined;
  const missing = 8 - left.length - right.length;
  if (compressed ? missing < 1 : missing !== 0) return undefined;
  const groups = [...left, ...new Array<number>(missing).fill(0), ...right];
  const bytes = new Uint8Array(16);
  groups.forEach((group, index) => {
    bytes[index * 2] = group >> 8;
    bytes[index * 2 + 1] = group & 255;
  });
  return zone === undefined ? { bytes } : { bytes, zone };
}

/** A zone id as written after `%` (`eth0`, or `25eth0` percent-encoded in a URL): non-empty, no separators. */
function decodeZone(text: string): string | undefined {
  const zone = text.startsWith("25") && text.length > 2 ? text.slice(2) : text;
  return /^[0-9A-Za-z_.~-]+$/.test(zone) ? zone : undefined;
}

/** Any address form: IPv6 when it holds a `:`, else IPv4 as the URL parser reads it. */
export function parseIpAddress(text: string): IpAddress | undefined {
  const trimmed = text.trim();
  if (trimmed.includes(":")) {
    const parsed = parseIpv6(trimmed);
    if (parsed === undefined) return undefined;
    return parsed.zone === undefined
      ? { family: 6, bytes: parsed.bytes }
      : { family: 6, bytes: parsed.bytes, zone: parsed.zone };
  }
  const bytes = parseIpv4(trimmed);
  return bytes === undefined ? undefined : { family: 4, bytes };
}

/** RFC 5952 text: dotted IPv4; lowercase IPv6 with the longest run of two or more zero groups as `::`. */
export function formatIpAddress(address: IpAddress): string {
  if (address.family === 4) return Array.from(address.bytes).join(".");
  const groups = Array.from(
    { length: 8 },
    (_, index) => ((address.bytes[index * 2] as number) << 8) | (address.bytes[index * 2 + 1] as number),
  );
  let bestStart = -1;
  let bestLength = 1;
  for (let start = 0; start < 8; start++) {
    let length = 0;
    while (start + length < 8 && groups[start + length] === 0) length++;
    if (length > bestLength) [bestStart, bestLength] = [start, length];
  }
  const hex = groups.map((group) => group.toString(16));
  const text =
    bestStart < 0
      ? hex.join(":")
      : `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
  return address.zone === undefined ? text : `${text}%${address.zone}`;
}

/** `10.0.0.0/8`, `fd00::/8`, or one address (a /32 or /128). Host bits past the prefix are refused (a typo guard). */
export function parseCidr(text: string): { ok: true; value: Cidr } | { ok: false; error: string } {
  const [addressText, prefixText, extra] = text.trim().split("/");
  const address = addressText === undefined ? undefined : parseIpAddress(addressText);
  if (address === undefined || extra !== undefined || (address.family === 6 && address.zone !== undefined))
    return { ok: false, error: `${JSON.stringify(text)} is not an IP address or CIDR block` };
  const width = address.bytes.length * 8;
  if (prefixText === undefined)
    return { ok: true, value: { family: address.family, bytes: address.bytes, prefix: width } };
  const prefix = /^[0-9]{1,3}$/.test(prefixText) ? Number(prefixText) : Number.NaN;
  if (!(prefix >= 0 && prefix <= width))
    return { ok: false, error: `${JSON.stringify(text)}: the prefix length must be 0 to ${width}` };
  const cidr: Cidr = { family: address.family, bytes: address.bytes, prefix };
  const network = networkOf(cidr);
  if (!sameBytes(network, address.bytes)) {
    return {
      ok: false,
      error: `${JSON.stringify(text)} has bits set past the /${prefix} prefix (did you mean ${formatIpAddress({ family: address.family, bytes: network } as IpAddress)}/${prefix}?)`,
    };
  }
  return { ok: true, value: cidr };
}

function networkOf(cidr: Cidr): Uint8Array {
  return cidr.bytes.map((byte, index) => {
    const bits = Math.max(0, Math.min(8, cidr.prefix - index * 8));
    return byte & ((0xff << (8 - bits)) & 0xff);
  });
}

function sameBytes(left: Uint8Array, right: Uint8Array): boolean {
  return left.length === right.length && left.every((byte, index) => byte === right[index]);
}

/** Whether the block holds the address (same family only: embedded IPv4 is the caller's concern). */
export function cidrContains(cidr: Cidr, address: IpAddress): boolean {
  if (cidr.family !== address.family) return false;
  const whole = cidr.prefix >> 3;
  for (let index = 0; index < whole; index++) if (cidr.bytes[index] !== address.bytes[index]) return false;
  const bits = cidr.prefix & 7;
  if (bits === 0) return true;
  const mask = (0xff << (8 - bits)) & 0xff;
  return ((cidr.bytes[whole] as number) & mask) === ((address.bytes[whole] as number) & mask);
}

export function formatCidr(cidr: Cidr): string {
  return `${formatIpAddress({ family: cidr.family, bytes: cidr.bytes } as IpAddress)}/${cidr.prefix}`;
}

/** A CIDR from constant text (the range tables); throws on a programming error. */
export function cidr(text: string): Cidr {
  const parsed = parseCidr(text);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
}
