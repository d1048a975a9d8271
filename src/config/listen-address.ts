/**
 * Listen addresses `HOST:PORT` (`[::1]:7777`, `:7777` for every interface) and the loopback
 * test the startup policy uses.
 */
import { type Result, err, ok } from "../core/result.ts";

export interface ListenAddress {
  /** "" means every interface. */
  host: string;
  port: number;
}

export function parseListenAddress(text: string): Result<ListenAddress> {
  const match = /^(?:\[([^\]]*)\]|([^:]*)):(\d{1,5})$/.exec(text.trim());
  const port = Number(match?.[3]);
  if (!match || !Number.isInteger(port) || port > 65535) {
    return err(`invalid listen address ${JSON.stringify(text)}: expected HOST:PORT such as 127.0.0.1:7777`);
  }
  return ok({ host: match[1] ?? match[2] ?? "", port });
}

export function isLoopbackHost(host: string): boolean {
  const lower = host.toLowerCase();
  if (lower === "localhost" || lower === "::1" || lower === "0:0:0:0:0:0:0:1") return true;
  const octets = lower.split(".");
  return (
    octets.length === 4 &&
    octets[0] === "127" &&
    octets.every((octet) => /^\d{1,3}$/.test(octet) && Number(octet) <= 255)
  );
}

/** The hostname to hand Bun.serve: "" binds every interface. */
export function bindHostname(address: ListenAddress): string {
  return address.host === "" ? "0.0.0.0" : address.host;
}
