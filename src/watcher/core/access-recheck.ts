/**
 * The access re-check sweep (`--access-recheck`; docs/watcher-pipeline.md#access-plan): every sweep
 * asks the declared permissions again; a permission is revoked only when it is denied on two
 * consecutive sweeps (one denial may be an authorizer hiccup or a rolling role update). A review
 * that errors neither counts nor resets. A required permission revoked stops the runner; an
 * optional one degrades loudly and the runner keeps going; an optional one granted again is
 * restored. Only grants held at startup are tracked: a permission that was never granted (a source
 * or watch the startup plan left off) can never be revoked. Pure; the caller runs the reviews.
 */
import { type AccessAnswer, type AccessCheck, checkKey, describeCheck } from "./access-plan.ts";

export interface Revocation {
  check: AccessCheck;
  description: string;
  required: boolean;
  reason?: string;
}

export interface RecheckVerdict {
  revoked: Revocation[];
  restored: AccessCheck[];
  /** A required permission is revoked: the runner must stop. */
  stop: boolean;
}

interface Tracked {
  check: AccessCheck;
  required: boolean;
  denials: number;
  revoked: boolean;
}

export class AccessRecheck {
  private readonly tracked = new Map<string, Tracked>();

  /** `heldAtStartup`: the startup review's answer; checks it did not allow are not tracked. */
  constructor(
    required: readonly AccessCheck[],
    optional: readonly AccessCheck[],
    heldAtStartup: (check: AccessCheck) => boolean = () => true,
  ) {
    for (const check of optional)
      if (heldAtStartup(check))
        this.tracked.set(checkKey(check), { check, required: false, denials: 0, revoked: false });
    for (const check of required)
      if (heldAtStartup(check))
        this.tracked.set(checkKey(check), { check, required: true, denials: 0, revoked: false });
  }

  checks(): AccessCheck[] {
    return [...this.tracked.values()].map((entry) => entry.check);
  }

  sweep(answer: (check: AccessCheck) => AccessAnswer): RecheckVerdict {
    const verdict: RecheckVerdict = { revoked: [], restored: [], stop: false };
    for (const entry of this.tracked.values()) {
      const found = answer(entry.check);
      if ("error" in found) continue;
      if (found.allowed) {
        if (entry.revoked && !entry.required) verdict.restored.push(entry.check);
        if (!entry.required || !entry.revoked) {
          entry.revoked = false;
          entry.denials = 0;
        }
        continue;
      }
      entry.denials++;
      if (entry.denials >= 2 && !entry.revoked) {
        entry.revoked = true;
        verdict.revoked.push({
          check: entry.check,
          description: describeCheck(entry.check),
          required: entry.required,
          ...(found.reason ? { reason: found.reason } : {}),
        });
      }
    }
    verdict.stop = verdict.revoked.some((revocation) => revocation.required);
    return verdict;
  }
}
