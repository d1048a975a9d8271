/**
 * The builtin tools' flags and config keys: the workspace root file tools and bash work in
 * (default: the daemon's working directory), `tools.disable`, the builtin tools the model is
 * never offered, and `outbound.allow`, what the outbound guard lets a model-supplied URL reach
 * beyond public addresses (src/net/outbound-allow-list.ts). Flags win over the config file.
 * Owns no tool behavior (src/tools/).
 */
import { realpathSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { type Result, err, ok } from "../core/result.ts";
import { parseOutboundAllowList } from "../net/outbound-allow-list.ts";
import { isEnvPattern } from "../tools/tool-environment.ts";
import { BUILTIN_TOOL_NAMES } from "../tools/builtin-tools.ts";
import type { FlagSpec, FlagValue } from "../config/flag-spec.ts";
import { type Setting, SettingReader } from "../config/setting-reader.ts";
import { DIGEST_FLAGS, type DigestSettings, resolveDigestSettings } from "./digest-flags.ts";

export const TOOLS_FLAGS: readonly FlagSpec[] = [
  {
    name: "tools-root",
    kind: "string",
    help: "workspace root of the builtin tools: file paths resolve inside it and bash runs in it",
    defaultText: "the daemon's working directory",
    configKey: "tools.root",
  },
  {
    name: "tools-disable",
    kind: "string",
    help: `builtin tools never offered to the model, comma-separated (${BUILTIN_TOOL_NAMES.join(", ")})`,
    configKey: "tools.disable",
  },
  {
    name: "outbound-allow",
    kind: "string",
    help: "addresses, CIDR blocks and host names (*.example.com for a subtree) that fetch_url and call_a2a may reach although private, loopback, link-local or otherwise refused by default, comma-separated",
    defaultText: "none: only public addresses",
    configKey: "outbound.allow",
  },
  {
    name: "tools-env-passthrough",
    kind: "string",
    help: "environment variables (or PREFIX_* patterns) bash gets besides PATH, HOME, USER, LOGNAME, SHELL, LANG, LC_*, TERM, TZ, TMPDIR and the like, comma-separated; the daemon's own secrets never pass",
    configKey: "tools.env_passthrough",
  },
  ...DIGEST_FLAGS,
];

export interface ToolsSettings {
  /** Absolute real path of the workspace root. */
  root: string;
  disabled: string[];
  /** The outbound allow list, entries in canonical form (validated). */
  outboundAllow: string[];
  /** Variables (or `PREFIX_*` patterns) bash gets besides the default allow list. */
  envPassthrough: string[];
  /** How large tool results are reduced before the model reads them (D352). */
  digest: DigestSettings;
}

/** A list setting: a list of strings, or one comma-separated string. */
function listOf(value: unknown): string[] | undefined {
  if (typeof value === "string") return value.split(",");
  return Array.isArray(value) && value.every((item) => typeof item === "string") ? (value as string[]) : undefined;
}

function disabledNames(found: Setting): Result<string[]> {
  if (found === undefined) return ok([]);
  const names = listOf(found.value);
  if (names === undefined) return err(`${found.from} must be a list of tool names (or one comma-separated string)`);
  const cleaned = [...new Set(names.map((name) => name.trim()).filter((name) => name !== ""))];
  const unknown = cleaned.find((name) => !BUILTIN_TOOL_NAMES.includes(name));
  if (unknown !== undefined)
    return err(`${found.from}: ${JSON.stringify(unknown)} is not a builtin tool (${BUILTIN_TOOL_NAMES.join(", ")})`);
  return ok(cleaned);
}

function outboundAllow(found: Setting): Result<string[]> {
  if (found === undefined) return ok([]);
  const entries = listOf(found.value);
  if (entries === undefined)
    return err(`${found.from} must be a list of addresses, CIDR blocks and host names (or one comma-separated string)`);
  const parsed = parseOutboundAllowList(entries);
  return parsed.ok ? ok([...parsed.value.entries]) : err(`${found.from}: ${parsed.error}`);
}

function envNames(found: Setting): Result<string[]> {
  if (found === undefined) return ok([]);
  const names = listOf(found.value);
  if (names === undefined) return err(`${found.from} must be a list of variable names (or one comma-separated string)`);
  const cleaned = [...new Set(names.map((name) => name.trim()).filter((name) => name !== ""))];
  const bad = cleaned.find((name) => !isEnvPattern(name));
  return bad === undefined
    ? ok(cleaned)
    : err(`${found.from}: ${JSON.stringify(bad)} is not a variable name or a PREFIX_* pattern`);
}

/** Read the settings; the root must be an existing directory (a relative one is taken from `cwd`). */
export function resolveToolsSettings(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
  cwd: string,
): Result<ToolsSettings> {
  const read = new SettingReader(TOOLS_FLAGS, flags, config);
  const rootSetting = read.setting("tools-root");
  if (rootSetting !== undefined && (typeof rootSetting.value !== "string" || rootSetting.value.trim() === ""))
    return err(`${rootSetting.from} must be a directory path`);
  const wanted = resolve(cwd, rootSetting === undefined ? "." : String(rootSetting.value).trim());
  let root: string;
  try {
    if (!statSync(wanted).isDirectory())
      return err(`${rootSetting?.from ?? "the working directory"}: ${wanted} is not a directory`);
    root = realpathSync(wanted);
  } catch {
    return err(`${rootSetting?.from ?? "the working directory"}: ${wanted} does not exist`);
  }
  const disabled = disabledNames(read.setting("tools-disable"));
  if (!disabled.ok) return disabled;
  const allow = outboundAllow(read.setting("outbound-allow"));
  if (!allow.ok) return allow;
  const envPassthrough = envNames(read.setting("tools-env-passthrough"));
  if (!envPassthrough.ok) return envPassthrough;
  const digest = resolveDigestSettings(flags, config);
  if (!digest.ok) return digest;
  return ok({
    root,
    disabled: disabled.value,
    outboundAllow: allow.value,
    envPassthrough: envPassthrough.value,
    digest: digest.value,
  });
}
