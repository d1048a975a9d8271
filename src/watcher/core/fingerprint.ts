/**
 * The signal fingerprint (docs/watcher-pipeline.md#fingerprint, frozen):
 * `sha256:` + hex(sha256(kind NUL reasonClass NUL objectClass NUL zone)). The cluster is not part
 * of it; the zone is the failure domain from --zone. Pure: the hash is passed in (the dispatcher
 * passes node:crypto's; D347), so the core keeps no hash implementation of its own.
 */

/** SHA-256 of a string's UTF-8 bytes as lowercase hex. */
export type Sha256Hex = (text: string) => string;

export function fingerprint(
  sha256Hex: Sha256Hex,
  kind: string,
  reasonClass: string,
  objectClass: string,
  zone: string,
): string {
  return `sha256:${sha256Hex(`${kind}\0${reasonClass}\0${objectClass}\0${zone}`)}`;
}
