/**
 * Identity lists of a session ACL: normalized on input (trimmed, empty entries dropped,
 * duplicates removed, caller order kept); matching is exact. Pure.
 */
export function normalizeIdentities(identities: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of identities) {
    const identity = raw.trim();
    if (identity === "" || seen.has(identity)) continue;
    seen.add(identity);
    out.push(identity);
  }
  return out;
}
