/**
 * The identities spar itself acts under, which no credential may name (D328): the single-user
 * caller `local`, the `anonymous` guest, svc's pause `timer`, its listeners' fixed callers
 * (`svc-inject`, `svc-attach`, `svc-a2a`, `svc-agui`: every `svc-` name), the daemon's internal
 * principals (`svc:`, `mast:`, `spar:` names) and the operator CLI's direct identities
 * (`operator ...`). A token whose tenant or subject is one of them, a proxy assertion of one, or a
 * caller-table entry naming one would let a tenant act as the daemon (approve another tenant's
 * gated call as the operator, read every task as the listener), and the audit trail could not
 * tell them apart. Every place that turns a credential into a caller asks `credentialIdentity`;
 * pure.
 */

const RESERVED_NAMES: ReadonlySet<string> = new Set(["local", "anonymous", "timer"]);
const RESERVED_PREFIXES: readonly string[] = ["svc-", "svc:", "mast:", "spar:", "operator "];

/** Why `identity` cannot be a caller named by a credential, or undefined when it can. */
export function reservedIdentityReason(identity: string): string | undefined {
  const name = identity.trim().toLowerCase();
  if (RESERVED_NAMES.has(name)) return `${JSON.stringify(identity)} is an identity the daemon itself uses`;
  const prefix = RESERVED_PREFIXES.find((candidate) => name.startsWith(candidate));
  if (prefix !== undefined)
    return `${JSON.stringify(identity.slice(0, 256))} is in the daemon's reserved namespace ${JSON.stringify(`${prefix.trim()}*`)}`;
  return undefined;
}

/**
 * The identity a credential names, checked: returns it, or throws what `refuse` makes of the
 * reason (the listener's 401). `what` says where the name came from, for the message.
 */
export function credentialIdentity(identity: string, what: string, refuse: (message: string) => Error): string {
  const reason = reservedIdentityReason(identity);
  if (reason !== undefined) throw refuse(`${what} is refused: ${reason}, never a caller's`);
  return identity;
}
