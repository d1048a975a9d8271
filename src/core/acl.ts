/**
 * The session ACL matrix (docs/attach-api.md#conventions, Access): who may list, read, write and
 * administer a session. Owner: everything; contributor: read and write; viewer: read; daemon
 * admins: everything. A denial is reported by the caller as a missing session (masked 404). Pure.
 */

export type SessionAction = "read" | "write" | "admin";

export interface Principal {
  identity: string;
  admin: boolean;
}

export interface SessionAcl {
  owner: string;
  viewers: readonly string[];
  contributors: readonly string[];
}

export function allows(acl: SessionAcl, principal: Principal, action: SessionAction): boolean {
  if (principal.admin || principal.identity === acl.owner) return true;
  if (action === "admin") return false;
  if (acl.contributors.includes(principal.identity)) return true;
  return action === "read" && acl.viewers.includes(principal.identity);
}

/** SessionList: the sessions a caller sees are the ones it may read; admins see all. */
export function canList(acl: SessionAcl, principal: Principal): boolean {
  return allows(acl, principal, "read");
}

export interface AclPatch {
  owner?: string;
  viewers?: readonly string[];
  contributors?: readonly string[];
}

/**
 * Merge a PATCH into an ACL: an omitted list is unchanged, `[]` clears it; `owner` may only
 * repeat the current owner. Returns the new ACL or the reason for a 400.
 */
export function mergeAcl(
  current: SessionAcl,
  patch: AclPatch,
): { ok: true; value: SessionAcl } | { ok: false; error: string } {
  if (patch.owner !== undefined && patch.owner !== current.owner) {
    return { ok: false, error: "owner is not transferable: send the current owner or leave it out" };
  }
  return {
    ok: true,
    value: {
      owner: current.owner,
      viewers: patch.viewers ?? current.viewers,
      contributors: patch.contributors ?? current.contributors,
    },
  };
}
