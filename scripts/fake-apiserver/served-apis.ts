/**
 * Which of the fake's group/versions are served right now: all of RESOURCES, less those a test
 * took away (a cluster without the Gateway API or cert-manager CRDs). A group/version not served
 * is absent from `/apis`, its `/apis/<group>/<version>` is 404, and so is every path under it,
 * as on a cluster where the CRD was never installed. Objects already stored are kept.
 */
export class ServedApis {
  readonly #hidden = new Set<string>();

  constructor(hidden: readonly string[] = []) {
    for (const groupVersion of hidden) this.#hidden.add(groupVersion);
  }

  /** `group/version` (`v1` for the core group). */
  served(group: string, version: string): boolean {
    return !this.#hidden.has(group === "" ? version : `${group}/${version}`);
  }

  set(groupVersion: string, served: boolean): void {
    if (served) this.#hidden.delete(groupVersion);
    else this.#hidden.add(groupVersion);
  }
}
