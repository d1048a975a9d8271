/**
 * The tool-output digest's flags and config keys (D352): which strategy reduces a tool result
 * larger than the threshold before the model reads it (`tools.digest.strategy`), and the
 * threshold (`tools.digest.threshold_bytes`). Flags win over the config file. Owns no behaviour:
 * src/core/digest.ts and src/runtime/tool-digest.ts digest.
 */
import type { DigestSettings } from "../core/digest.ts";
import { DIGEST_METHODS } from "../core/digest-tally.ts";
import { type Result, err, ok } from "../core/result.ts";
import type { FlagSpec, FlagValue } from "../config/flag-spec.ts";
import { SettingReader } from "../config/setting-reader.ts";

export type { DigestSettings };

export const DIGEST_FLAGS: readonly FlagSpec[] = [
  {
    name: "tools-digest",
    kind: "string",
    help: "how a tool result larger than --tools-digest-threshold reaches the model: structural (reduced by its shape: JSON, tables, logs), agentic (summarized by a tool-less model call, its cost counted) or passthrough (unchanged); the raw result stays readable on the attach API",
    defaultValue: "structural",
    choices: DIGEST_METHODS,
    configKey: "tools.digest.strategy",
  },
  {
    name: "tools-digest-threshold",
    kind: "int",
    help: "tool results up to this many bytes (their JSON) reach the model unchanged",
    defaultValue: "16384",
    bounds: { min: 1024, max: 64 * 1024 * 1024 },
    configKey: "tools.digest.threshold_bytes",
  },
];

export function resolveDigestSettings(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
): Result<DigestSettings> {
  const read = new SettingReader(DIGEST_FLAGS, flags, config);
  const strategy = read.oneOf<DigestSettings["strategy"]>("tools-digest");
  if (!strategy.ok) return err(strategy.error);
  const thresholdBytes = read.int("tools-digest-threshold");
  if (!thresholdBytes.ok) return err(thresholdBytes.error);
  return ok({ strategy: strategy.value, thresholdBytes: thresholdBytes.value });
}
