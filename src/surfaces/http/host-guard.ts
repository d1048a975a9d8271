/**
 * The first guard of every listener, before routing and before anything else is read: the header
 * section's size (431), the Host header's syntax (400) and, on a listener without an
 * authentication gate, the DNS-rebinding check (421).
 */
import { Elysia } from "elysia";
import { checkHeaderSize } from "./header-limit.ts";
import { type HostAllowlist, checkAllowedHost } from "./host-allowlist.ts";
import { checkHostHeader } from "./request-url.ts";

export function hostGuard(allowedHosts: HostAllowlist | undefined) {
  return new Elysia({ name: "spar.host-guard", seed: allowedHosts ?? "gated" }).onRequest(({ request }) => {
    checkHeaderSize(request);
    checkHostHeader(request);
    checkAllowedHost(request, allowedHosts);
  });
}
