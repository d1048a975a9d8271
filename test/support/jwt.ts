/**
 * HS256 JWTs for the protocol listeners' bearer (src/surfaces/http/protocol-bearer.ts). A token
 * lives an hour unless the claims say otherwise: `exp` is required (D329); pass `exp: undefined`
 * for a token without one.
 */
import { createHmac } from "node:crypto";

/** An HS256 JWT over `claims`, signed with `secret`; `header` replaces the usual one. */
export function signJwt(
  claims: Record<string, unknown>,
  secret: string,
  header: Record<string, unknown> = { alg: "HS256", typ: "JWT" },
  now: number = Date.now(),
): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const body = "exp" in claims ? claims : { ...claims, exp: Math.floor(now / 1000) + 3600 };
  const head = `${encode(header)}.${encode(body)}`;
  return `${head}.${createHmac("sha256", secret).update(head).digest("base64url")}`;
}
