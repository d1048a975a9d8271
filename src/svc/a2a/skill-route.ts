/**
 * Which exposed workload a fresh A2A send is for: the skill its message (or its params) names in
 * `metadata.skill`, else the single exposed one; several and no selector is unsupported (-32004),
 * a selector naming no exposed skill is invalid params (-32602) (docs/svc-a2a.md#errors).
 */
import { SparError } from "../../core/errors.ts";
import type { Workload } from "../workload/workload.ts";

export function skillSelector(...metadata: Array<Record<string, unknown> | undefined>): string | undefined {
  for (const entry of metadata) {
    const skill = entry?.skill;
    if (typeof skill === "string" && skill !== "") return skill;
  }
  return undefined;
}

export function routeSkill(exposed: readonly Workload[], selector: string | undefined): Workload {
  if (selector !== undefined) {
    const named = exposed.find((workload) => workload.name === selector);
    if (named === undefined)
      throw new SparError("bad_request", `no exposed skill ${JSON.stringify(selector)} (metadata.skill)`);
    return named;
  }
  const [only, ...others] = exposed;
  if (only === undefined) throw new SparError("not_implemented", "no workload is exposed over A2A");
  if (others.length > 0)
    throw new SparError(
      "not_implemented",
      `${exposed.length} skills are exposed: name one in the message's metadata.skill (${exposed.map((workload) => workload.name).join(", ")})`,
    );
  return only;
}
