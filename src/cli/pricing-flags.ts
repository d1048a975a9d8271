/**
 * The pricing flags and config keys: where `POST /pricing/refresh` reads (an http(s) URL or a
 * file), and whether the daemon refreshes once at startup. Flags win over the config file. Owns
 * no argv parsing (flags.ts) and no pricing behavior (runtime/pricing-table.ts).
 */
import { resolve } from "node:path";
import { type Result, err, ok } from "../core/result.ts";
import { type PricingSource, pricingSource } from "../pricing/pricing-source.ts";
import type { FlagSpec, FlagValue } from "../config/flag-spec.ts";
import { SettingReader } from "../config/setting-reader.ts";

export const PRICING_FLAGS: readonly FlagSpec[] = [
  {
    name: "pricing-source",
    kind: "string",
    help: 'where POST /pricing/refresh reads model rates: an http(s) URL or a JSON file (spar\'s {"version":1,"models":{...}} or a LiteLLM price map)',
    configKey: "pricing.source",
  },
  {
    name: "pricing-refresh-on-start",
    kind: "bool",
    help: "refresh from --pricing-source once at startup, in the background (a failure is logged; the shipped rates stand)",
    defaultText: "true when a source is set",
    configKey: "pricing.refresh_on_start",
  },
];

export interface PricingSettings {
  source: PricingSource | undefined;
  refreshOnStart: boolean;
}

/** Read both settings; a relative file path is taken from `cwd`. Errors name the flag or key. */
export function resolvePricingSettings(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
  cwd: string,
): Result<PricingSettings> {
  const read = new SettingReader(PRICING_FLAGS, flags, config);
  const source = read.setting("pricing-source");
  const start = read.setting("pricing-refresh-on-start");
  if (start !== undefined && typeof start.value !== "boolean") return err(`${start.from} must be true or false`);
  if (source === undefined) return ok({ source: undefined, refreshOnStart: false });
  if (typeof source.value !== "string" || source.value.trim() === "")
    return err(`${source.from} must be an http(s) URL or a file path`);
  const value = source.value.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value) && !/^https?:\/\//i.test(value))
    return err(`${source.from} must be an http(s) URL or a file path, got ${JSON.stringify(value)}`);
  const parsed = pricingSource(value);
  const resolved: PricingSource = parsed.kind === "file" ? { kind: "file", path: resolve(cwd, parsed.path) } : parsed;
  return ok({ source: resolved, refreshOnStart: start === undefined ? true : start.value === true });
}
