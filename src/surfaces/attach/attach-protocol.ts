/**
 * The attach protocol version and client version negotiation (only the major is enforced): part
 * of the attach wire, beside its frames (D215).
 * Pure.
 */
import { type Result, err, ok } from "../../core/result.ts";

/**
 * D5; what each version added: docs/attach-api.md#protocol-versions. Every route it names is
 * served; what is still missing answers as docs/attach-api.md#placeholder-endpoints says.
 */
export const PROTOCOL_VERSION = "1.16.0";
export const PROTOCOL_MAJOR = 1;

/**
 * Parse a client-declared version's major: an optional leading `v`, digits up to the first
 * `.`, `-` or `+`. Anything else is malformed.
 */
export function parseDeclaredMajor(declared: string): Result<number> {
  const trimmed = declared.trim();
  const match = /^v?(\d+)(?:[.\-+].*)?$/.exec(trimmed);
  if (!match?.[1])
    return err(`malformed protocol version ${JSON.stringify(declared)}: expected a semver such as 1.16.0`);
  const major = Number.parseInt(match[1], 10);
  if (!Number.isSafeInteger(major)) return err(`malformed protocol version ${JSON.stringify(declared)}`);
  return ok(major);
}

export type Negotiation =
  | { accepted: true }
  | { accepted: false; reason: "malformed" | "incompatible"; message: string };

/** Decide whether a client declaring `declared` (or nothing) may attach. */
export function negotiateProtocol(declared: string | undefined): Negotiation {
  if (declared === undefined) return { accepted: true };
  const parsed = parseDeclaredMajor(declared);
  if (!parsed.ok) return { accepted: false, reason: "malformed", message: parsed.error };
  if (parsed.value !== PROTOCOL_MAJOR) {
    return {
      accepted: false,
      reason: "incompatible",
      message: `protocol major ${parsed.value} is not supported; this daemon speaks ${PROTOCOL_VERSION}`,
    };
  }
  return { accepted: true };
}
