/**
 * The signal fingerprint (docs/watcher-pipeline.md#fingerprint, frozen):
 * `sha256:` + hex(sha256(kind NUL reasonClass NUL objectClass NUL zone)). The cluster is not part
 * of it; the zone is the failure domain from --zone. Pure.
 */
import { sha256Hex } from "./sha256.ts";

export function fingerprint(kind: string, reasonClass: string, objectClass: string, zone: string): string {
  return `sha256:${sha256Hex(`${kind}\0${reasonClass}\0${objectClass}\0${zone}`)}`;
}
