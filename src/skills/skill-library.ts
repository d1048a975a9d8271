/**
 * The skill bundles of the daemon (D130): every directory `<skills dir>/<name>/` holding a
 * SKILL.md. Scanned at start and on POST /reload; a bundle whose SKILL.md is bad is left out and
 * its problem joins `errors` (the path and the reason), never a crash. Resource files are every
 * other file of the bundle, read by relative path on demand and never outside the bundle.
 */
import { readFileSync, readdirSync, realpathSync, statSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";
import { type Result, err, ok } from "../core/result.ts";
import { parseSkillFile } from "./skill-file.ts";

export interface Skill {
  name: string;
  description: string;
  instructions: string;
  /** Real path of the bundle directory. */
  dir: string;
  /** Resource files, relative POSIX paths, sorted. */
  resources: string[];
}

export interface SkillScan {
  skills: Skill[];
  errors: string[];
}

/** Bigger SKILL.md or resource files are refused (the model would drown in them). */
export const MAX_SKILL_FILE_BYTES = 256 * 1024;
const MAX_RESOURCES = 500;
const MAX_DEPTH = 6;

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function listResources(dir: string): string[] {
  const found: string[] = [];
  const walk = (current: string, depth: number) => {
    if (depth > MAX_DEPTH || found.length >= MAX_RESOURCES) return;
    for (const entry of readdirSync(current, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(current, entry.name);
      if (entry.isDirectory()) walk(path, depth + 1);
      else if (entry.isFile() && !(current === dir && entry.name === "SKILL.md") && found.length < MAX_RESOURCES)
        found.push(relative(dir, path).split(sep).join("/"));
    }
  };
  walk(dir, 0);
  return found;
}

function loadBundle(root: string, name: string): Result<Skill> {
  const dir = join(root, name);
  const file = join(dir, "SKILL.md");
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return err(`${file}: no SKILL.md in the skill bundle`);
  }
  if (size > MAX_SKILL_FILE_BYTES) return err(`${file}: larger than ${MAX_SKILL_FILE_BYTES} bytes`);
  const parsed = parseSkillFile(readFileSync(file, "utf8"), name);
  if (!parsed.ok) return err(`${file}: ${parsed.error}`);
  const real = realpathSync(dir);
  return ok({ ...parsed.value, dir: real, resources: listResources(real) });
}

/** Read every bundle under `root` (a missing directory holds none), sorted by name. */
export function scanSkills(root: string): SkillScan {
  if (!isDirectory(root)) {
    try {
      statSync(root);
      return { skills: [], errors: [`${root}: the skills path is not a directory`] };
    } catch {
      return { skills: [], errors: [] };
    }
  }
  const skills: Skill[] = [];
  const errors: string[] = [];
  let names: string[];
  try {
    names = readdirSync(root).sort();
  } catch (error) {
    return { skills, errors: [`${root}: cannot list the skills directory: ${(error as Error).message}`] };
  }
  for (const name of names) {
    if (name.startsWith(".") || !isDirectory(join(root, name))) continue;
    try {
      const bundle = loadBundle(root, name);
      if (bundle.ok) skills.push(bundle.value);
      else errors.push(bundle.error);
    } catch (error) {
      errors.push(`${join(root, name)}: ${(error as Error).message}`);
    }
  }
  return { skills, errors };
}

/** A resource path the model asked for, checked: relative, no `..`, inside the bundle. */
export function resolveResource(skill: Skill, path: string): Result<string> {
  const cleaned = path.trim().replace(/^\.\//, "");
  if (cleaned === "" || cleaned.startsWith("/") || cleaned.split(/[\\/]/).includes(".."))
    return err(`resource path ${JSON.stringify(path)} must be relative to the skill bundle, without '..'`);
  const full = resolve(skill.dir, cleaned);
  let real: string;
  try {
    real = realpathSync(full);
  } catch {
    return err(
      `resource not found: ${JSON.stringify(cleaned)} in skill ${JSON.stringify(skill.name)} (resources: ${skill.resources.join(", ") || "none"})`,
    );
  }
  if (real !== skill.dir && !real.startsWith(skill.dir + sep))
    return err(`resource path ${JSON.stringify(path)} leaves the skill bundle`);
  return ok(real);
}

/** The loaded bundles; `reload()` re-reads them. */
export class SkillLibrary {
  readonly root: string;
  #scan: SkillScan = { skills: [], errors: [] };

  constructor(root: string) {
    this.root = root;
  }

  reload(): SkillScan {
    this.#scan = scanSkills(this.root);
    return this.#scan;
  }

  get skills(): readonly Skill[] {
    return this.#scan.skills;
  }

  get errors(): readonly string[] {
    return this.#scan.errors;
  }

  get(name: string): Skill | undefined {
    return this.#scan.skills.find((skill) => skill.name === name);
  }
}
