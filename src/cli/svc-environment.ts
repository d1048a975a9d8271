/**
 * The environment variables `spar svc` reads at startup (docs/svc.md#settings,
 * docs/configuration.md#environment-variables), read from a parameter, never from `process.env`:
 * the listeners' bearer tokens (`SVC_INJECT_TOKEN`, `SVC_ATTACH_TOKEN`, `SVC_A2A_TOKEN`,
 * `SVC_AGUI_TOKEN`), the A2A and AG-UI rate limits (`SVC_*_RATE`, `SVC_*_BURST`) and the scripted
 * model's script (`SVC_SCRIPT`, `SVC_SCRIPT_STRICT`). A malformed value is a startup error naming
 * the variable; a token's value never appears in an error (D228, D230).
 */
import { type Result, err, ok } from "../core/result.ts";
import type { ScriptSource } from "./model-flags.ts";
import type { RateLimit } from "../surfaces/http/rate-limiter.ts";

export type SvcEnvironment = Readonly<Record<string, string | undefined>>;

/** A token bucket: `perSecond` requests per second per caller and workload, `burst` deep. */
export type { RateLimit };

/**
 * A bearer token variable: unset is no token; set but blank is refused (an empty secret mount
 * must not quietly leave a listener open).
 */
export function tokenVariable(env: SvcEnvironment, name: string): Result<string | undefined> {
  const value = env[name];
  if (value === undefined) return ok(undefined);
  if (value.trim() === "") return err(`${name} is set but empty: give it the token, or unset it for no token`);
  return ok(value);
}

const DECIMAL = /^(\d+\.?\d*|\.\d+)$/;

/**
 * `SVC_<surface>_RATE` (positive requests per second) and `SVC_<surface>_BURST` (a whole number,
 * at least 1, default ceil(rate)); unset rate: no limit. A burst without a rate is refused.
 */
export function rateVariables(env: SvcEnvironment, surface: "A2A" | "AGUI"): Result<RateLimit | undefined> {
  const rateName = `SVC_${surface}_RATE`;
  const burstName = `SVC_${surface}_BURST`;
  const rateText = env[rateName];
  const burstText = env[burstName];
  if (rateText === undefined) {
    if (burstText === undefined) return ok(undefined);
    return err(`${burstName} is set but ${rateName} is not: a burst needs a rate (requests per second)`);
  }
  const perSecond = DECIMAL.test(rateText.trim()) ? Number(rateText.trim()) : Number.NaN;
  if (!Number.isFinite(perSecond) || perSecond <= 0)
    return err(
      `${rateName} must be a positive number of requests per second (such as 5 or 0.5), got ${JSON.stringify(rateText)}`,
    );
  if (burstText === undefined) return ok({ perSecond, burst: Math.max(1, Math.ceil(perSecond)) });
  const burst = /^\d+$/.test(burstText.trim()) ? Number(burstText.trim()) : Number.NaN;
  if (!Number.isSafeInteger(burst) || burst < 1)
    return err(`${burstName} must be a whole number of requests, at least 1, got ${JSON.stringify(burstText)}`);
  return ok({ perSecond, burst });
}

export const SCRIPT_MISSING = 'model "scripted" requires SVC_SCRIPT (path to a JSON Lines script)';

/** The scripted model's script: `SVC_SCRIPT`, strict when `SVC_SCRIPT_STRICT=1` (0 or unset: not). */
export function svcScript(env: SvcEnvironment): ScriptSource {
  return {
    missing: SCRIPT_MISSING,
    read: () => {
      const path = env.SVC_SCRIPT?.trim() ?? "";
      if (path === "") return ok(undefined);
      const strict = env.SVC_SCRIPT_STRICT;
      if (strict !== undefined && strict !== "" && strict !== "0" && strict !== "1")
        return err(`SVC_SCRIPT_STRICT must be 1 (strict matching) or 0, got ${JSON.stringify(strict)}`);
      return ok({ path, strict: strict === "1", from: "SVC_SCRIPT" });
    },
  };
}
