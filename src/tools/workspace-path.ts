/**
 * File tools work inside one workspace root. A path (relative to the root, or absolute) is
 * resolved, then every existing part of it is resolved through symlinks (a dangling one is
 * followed to its target): a path whose real location is outside the root is refused, so `..`
 * and links cannot reach past it.
 */
import { lstat, readlink, realpath } from "node:fs/promises";
import { basename, dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { type Result, err, ok } from "../core/result.ts";

function insideRoot(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** Symlinks followed before a path is taken as a loop (the kernel's own limit is 40). */
const MAX_LINKS = 40;

/** The target a dangling symlink at `path` points to, absolute; undefined when `path` is no link. */
async function danglingTarget(path: string): Promise<string | undefined> {
  try {
    if (!(await lstat(path)).isSymbolicLink()) return undefined;
    return resolve(dirname(path), await readlink(path));
  } catch {
    return undefined;
  }
}

/**
 * Where the path really is: the real path of the nearest existing ancestor with the missing tail
 * appended; a dangling symlink on the way is followed to its target, as creating the file through
 * it would (a link to a file outside that does not exist yet must not let a write out).
 */
async function realLocation(path: string, linksFollowed = 0): Promise<string> {
  const missing: string[] = [];
  let current = path;
  for (;;) {
    try {
      const real = await realpath(current);
      return missing.length === 0 ? real : resolve(real, ...missing.reverse());
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ELOOP") throw new Error("too many levels of symbolic links");
      if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
      const target = await danglingTarget(current);
      if (target !== undefined) {
        if (linksFollowed >= MAX_LINKS) throw new Error("too many levels of symbolic links");
        return realLocation(resolve(target, ...missing.reverse()), linksFollowed + 1);
      }
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
  let real: string;
  try {
    real = await realLocation(absolute);
  } catch (error) {
    return err(
      `path ${JSON.stringify(path)} cannot be resolved: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (!insideRoot(root, real))
    return err(`path ${JSON.stringify(path)} leads outside the workspace ${root} (through a symlink)`);
  return ok(absolute);
}

/** The path as the model should see it: relative to the root. */
export function shownPath(root: string, absolute: string): string {
  return relative(root, absolute) || ".";
}
