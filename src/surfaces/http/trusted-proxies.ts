/**
 * Which connections may speak for the client in `X-Forwarded-Host` and `X-Forwarded-Proto`: only
 * those whose peer address is in `--attach-trusted-proxies` (addresses or CIDR blocks). From
 * anyone else the headers are ignored, so a caller cannot make the daemon describe itself under
 * a host of the caller's choosing (the agent card's `url`). An IPv4-mapped peer address
 * (`::ffff:10.0.0.1`, as a dual-stack socket reports it) is matched as its IPv4.
 */
import { type Cidr, cidrContains, parseCidr, parseIpAddress } from "../../core/ip-address.ts";
import { type Result, err, ok } from "../../core/result.ts";

export type TrustedProxies = readonly Cidr[];

export function parseTrustedProxies(entries: readonly string[], setting: string): Result<TrustedProxies> {
  const blocks: Cidr[] = [];
  for (const entry of entries) {
    const parsed = parseCidr(entry);
    if (!parsed.ok) return err(`${setting}: ${parsed.error}`);
    blocks.push(parsed.value);
  }
  return ok(blocks);
}

/** Whether a connection from `peerAddress` is one of the trusted proxies. */
export function isTrustedProxy(peerAddress: string | undefined, trusted: TrustedProxies | undefined): boolean {
  if (peerAddress === undefined || trusted === undefined || trusted.length === 0) return false;
  const parsed = parseIpAddress(peerAddress.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, "$1"));
  return parsed !== undefined && trusted.some((block) => cidrContains(block, parsed));
}
