/**
 * The builtin tools' flags and config keys: the workspace root file tools and bash work in
 * (default: the daemon's working directory) and `tools.disable`, the builtin tools the model is
 * never offered. Flags win over the config file. Owns no tool behavior (src/tools/).
 */
import { realpathSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { type Result, err, ok } from "../core/result.ts";
import { BUILTIN_TOOL_NAMES } from "../tools/builtin-tools.ts";
import type { FlagSpec, FlagValue } from "./flags.ts";
import { type Setting, settingOf } from "./flag-setting.ts";

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
];

export interface ToolsSettings {
  /** Absolute real path of the workspace root. */
  root: string;
  disabled: string[];
}

function disabledNames(found: Setting): Result<string[]> {
  if (found === undefined) return ok([]);
  const value = found.value;
  const names = typeof value === "string" ? value.split(",") : Array.isArray(value) && value.every((item) => typeof item === "string") ? (value as string[]) : undefined;
  if (names === undefined) return err(`${found.from} must be a list of tool names (or one comma-separated string)`);
  const cleaned = [...new Set(names.map((name) => name.trim()).filter((name) => name !== ""))];
  const unknown = cleaned.find((name) => !BUILTIN_TOOL_NAMES.includes(name));
  if (unknown !== undefined) return err(`${found.from}: ${JSON.stringify(unknown)} is not a builtin tool (${BUILTIN_TOOL_NAMES.join(", ")})`);
  return ok(cleaned);
}

/** Read both settings; the root must be an existing directory (a relative one is taken from `cwd`). */
export function resolveToolsSettings(flags: ReadonlyMap<string, FlagValue>, config: ReadonlyMap<string, unknown>, cwd: string): Result<ToolsSettings> {
  const [rootSpec, disableSpec] = TOOLS_FLAGS as readonly [FlagSpec, FlagSpec];
  const rootSetting = settingOf(flags, config, rootSpec);
  if (rootSetting !== undefined && (typeof rootSetting.value !== "string" || rootSetting.value.trim() === "")) return err(`${rootSetting.from} must be a directory path`);
  const wanted = resolve(cwd, rootSetting === undefined ? "." : String(rootSetting.value).trim());
  let root: string;
  try {
    if (!statSync(wanted).isDirectory()) return err(`${rootSetting?.from ?? "the working directory"}: ${wanted} is not a directory`);
    root = realpathSync(wanted);
  } catch {
    return err(`${rootSetting?.from ?? "the working directory"}: ${wanted} does not exist`);
  }
  const disabled = disabledNames(settingOf(flags, config, disableSpec));
  if (!disabled.ok) return disabled;
  return ok({ root, disabled: disabled.value });
}
