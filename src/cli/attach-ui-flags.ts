/**
 * Flags and config keys of the attach listener's browser face, shared by `spar agent` and
 * `spar svc --attach-listen`: the embedded dashboard's directory (`--ui-dir`, D368) and the
 * origins allowed cross-origin (`--attach-cors-origins`, D371). Read flag first, then config key;
 * a bad value is an error naming where it was set. Owns no behaviour: the attach surface
 * (ui-routes.ts) and the shared CORS plugin (cors-policy.ts) apply them.
 */
import { statSync } from "node:fs";
import { resolve } from "node:path";
import { type Result, err, ok } from "../core/result.ts";
import type { FlagSpec, FlagValue } from "../config/flag-spec.ts";
import { SettingReader } from "../config/setting-reader.ts";
import { type AllowedOrigins, parseAllowedOrigins } from "../surfaces/http/cors-policy.ts";
import { staticRoot } from "../surfaces/http/static-directory.ts";

export const ATTACH_UI_FLAGS: readonly FlagSpec[] = [
  {
    name: "ui-dir",
    kind: "string",
    help: "serve this directory (relative: from the working directory) at /ui/ on the attach listener, behind its token, and answer GET /config for the dashboard in it (the mast-web web/ folder as is); must be an existing directory",
    configKey: "attach.ui_dir",
  },
  {
    name: "attach-cors-origins",
    kind: "string",
    help: "browser origins (http(s)://host[:port], comma-separated) allowed to call the attach listener cross-origin: their preflights are answered and their writes pass the CSRF check; none by default",
    configKey: "attach.cors_origins",
  },
];

export interface AttachUiSettings {
  /** The UI directory's real path; undefined: no `/ui/*`, no `/config`. */
  uiDir?: string;
  /** Allowed cross-origin origins (empty: none). */
  corsOrigins: AllowedOrigins;
}

/** A list setting: an array of strings or one comma-separated string. */
function listSetting(read: SettingReader, name: string): Result<string[]> {
  const found = read.setting(name);
  if (found === undefined) return ok([]);
  const value = found.value;
  const items =
    typeof value === "string"
      ? value.split(",")
      : Array.isArray(value) && value.every((item) => typeof item === "string")
        ? (value as string[])
        : undefined;
  if (items === undefined) return err(`${found.from} must be a list of strings (or one comma-separated string)`);
  return ok(items.map((item) => item.trim()).filter((item) => item !== ""));
}

function uiDirectory(read: SettingReader, cwd: string): Result<string | undefined> {
  const found = read.setting("ui-dir");
  if (found === undefined) return ok(undefined);
  if (typeof found.value !== "string" || found.value.trim() === "")
    return err(`${found.from} must name a directory (the dashboard's files)`);
  const dir = resolve(cwd, found.value.trim());
  try {
    if (!statSync(dir).isDirectory()) return err(`${found.from}: ${dir} is not a directory`);
    return ok(staticRoot(dir));
  } catch {
    return err(`${found.from}: ${dir} does not exist (want the directory of the dashboard's files)`);
  }
}

export function resolveAttachUi(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
  cwd: string,
): Result<AttachUiSettings> {
  const read = new SettingReader(ATTACH_UI_FLAGS, flags, config);
  const uiDir = uiDirectory(read, cwd);
  if (!uiDir.ok) return uiDir;
  const entries = listSetting(read, "attach-cors-origins");
  if (!entries.ok) return entries;
  const origins = parseAllowedOrigins(entries.value, read.from("attach-cors-origins"));
  if (!origins.ok) return origins;
  return ok({ ...(uiDir.value !== undefined ? { uiDir: uiDir.value } : {}), corsOrigins: origins.value });
}
