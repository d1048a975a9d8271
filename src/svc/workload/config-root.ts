/**
 * The `.agents/` config root of name mode (docs/svc-workloads.md#modes; the paths are spar's):
 * exactly one root, first match wins, never merged: `SVC_CONFIG_DIR` (set but not a directory is
 * fatal, no fall-through), `<cwd>/.agents`, `$XDG_CONFIG_HOME/spar/agents` or
 * `~/.config/spar/agents`, `/etc/spar/agents`. Also the flat scans of a root's subfolders.
 * Environment and cwd are parameters.
 */
import { readdirSync, statSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { type Result, err, ok } from "../../core/result.ts";

export type Environment = Readonly<Record<string, string | undefined>>;

export const SYSTEM_CONFIG_DIR = "/etc/spar/agents";

export interface ConfigRoot {
  path: string;
  /** Which rule found it: `SVC_CONFIG_DIR`, `cwd`, `user` or `system`. */
  source: string;
  notices: string[];
  warnings: string[];
}

interface Candidate {
  path: string;
  source: string;
}

export function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The user config directory as Go's os.UserConfigDir finds it on Linux, or undefined. */
function userConfigDir(env: Environment): string | undefined {
  const xdg = env.XDG_CONFIG_HOME;
  if (xdg !== undefined && xdg !== "" && isAbsolute(xdg)) return xdg;
  const home = env.HOME;
  return home !== undefined && home !== "" ? join(home, ".config") : undefined;
}

function candidates(cwd: string, env: Environment, systemConfigDir: string): Candidate[] {
  const list: Candidate[] = [{ path: join(cwd, ".agents"), source: "cwd" }];
  const user = userConfigDir(env);
  if (user !== undefined) list.push({ path: join(user, "spar", "agents"), source: "user" });
  list.push({ path: systemConfigDir, source: "system" });
  return list;
}

/** Files directly in `folder` whose names end in one of `extensions`, sorted; a missing folder has none. */
export function flatScan(folder: string, extensions: readonly string[]): string[] {
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return [];
  }
  return names
    .filter((name) => extensions.some((extension) => name.endsWith(extension)))
    .sort()
    .map((name) => join(folder, name))
    .filter(isFile);
}

/** Find the one config root; the notices and warnings are for the caller's log. */
export function findConfigRoot(cwd: string, env: Environment, systemConfigDir = SYSTEM_CONFIG_DIR): Result<ConfigRoot> {
  const explicit = env.SVC_CONFIG_DIR;
  const lower = candidates(cwd, env, systemConfigDir);
  let chosen: Candidate | undefined;
  if (explicit !== undefined && explicit !== "") {
    const path = resolve(cwd, explicit);
    if (!isDirectory(path)) return err(`config: SVC_CONFIG_DIR=${explicit} is not a directory`);
    chosen = { path, source: "SVC_CONFIG_DIR" };
  } else {
    chosen = lower.find((candidate) => isDirectory(candidate.path));
  }
  if (chosen === undefined)
    return err(
      `config: no .agents root found (set SVC_CONFIG_DIR or create one of: [${lower.map((c) => c.path).join(" ")}])`,
    );
  const winner = chosen;
  const warnings = lower
    .filter((candidate) => candidate.path !== winner.path && isDirectory(candidate.path))
    .filter((candidate) => winner.source === "SVC_CONFIG_DIR" || lower.indexOf(candidate) > lower.indexOf(winner))
    .map(
      (candidate) =>
        `config: ignoring .agents root ${candidate.path} (source ${candidate.source}): ${winner.path} wins and roots are never merged`,
    );
  return ok({
    path: winner.path,
    source: winner.source,
    notices: [`config: using .agents root ${winner.path} (source ${winner.source})`],
    warnings,
  });
}
