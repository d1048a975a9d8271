/**
 * File tools work inside one workspace root. A path (relative to the root, or absolute) is
 * resolved, then every existing part of it is resolved through symlinks: a path whose real
 * location is outside the root is refused, so `..` and links cannot reach past it.
 */
import { realpath } from "node:fs/promises";
import { basename, dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { type Result, err, ok } from "../core/result.ts";

function insideRoot(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** The real path of the nearest existing ancestor, with the missing tail appended. */
async function realLocation(path: string): Promise<string> {
  const missing: string[] = [];
  let current = path;
  for (;;) {
    try {
      const real = await realpath(current);
      return missing.length === 0 ? real : resolve(real, ...missing.reverse());
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT" && (error as NodeJS.ErrnoException).code !== "ENOTDIR") throw error;
      const parent = dirname(current);
      if (parent === current) return path;
      missing.push(basename(current));
      current = parent;
    }
  }
}

/**
 * Resolve a tool's `path` argument inside `root` (itself a real, absolute path). The answer is
 * the absolute path to use, or a message for the model.
 */
export async function workspacePath(root: string, path: string): Promise<Result<string>> {
  if (path.includes("\0")) return err("path must not contain NUL");
  const absolute = resolve(root, path);
  if (!insideRoot(root, absolute)) return err(`path ${JSON.stringify(path)} is outside the workspace ${root}`);
  const real = await realLocation(absolute);
  if (!insideRoot(root, real)) return err(`path ${JSON.stringify(path)} leads outside the workspace ${root} (through a symlink)`);
  return ok(absolute);
}

/** The path as the model should see it: relative to the root. */
export function shownPath(root: string, absolute: string): string {
  return relative(root, absolute) || ".";
}
