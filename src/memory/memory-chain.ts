/**
 * The AGENTS.md memory chain (D132), broadest first:
 *   1. user: `~/.agents/AGENTS.md` (`--memory-user-file`; `-` turns it off);
 *   2. project: `<project root>/AGENTS.md`, then `<project root>/.agents/AGENTS.md`; the project
 *      root is the nearest ancestor of the daemon's working directory holding `.git`, else the
 *      working directory itself (`--memory-project-root` overrides);
 *   3. directory: `AGENTS.md` in each directory below the project root down to the working
 *      directory, outermost first.
 * Later sources are more specific and win where they conflict; the system prompt says so. A
 * missing file is not an error; an unreadable one is (named in `errors`). A file past the cap is
 * cut and reported. The same file reached twice (symlinks, HOME inside the project) counts once.
 */
import { existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

export type MemoryScope = "user" | "project" | "directory";

export interface MemorySource {
  scope: MemoryScope;
  path: string;
  /** Size of the file on disk. */
  bytes: number;
  /** What the system prompt carries (cut at the per-file cap). */
  text: string;
}

export interface MemorySettings {
  /** The user-scope file; absent: no user scope. */
  userFile?: string;
  /** Absent: found from `workingDir` (nearest `.git`). */
  projectRoot?: string;
  workingDir: string;
}

export interface MemoryLoad {
  sources: MemorySource[];
  errors: string[];
}

export const MAX_MEMORY_FILE_BYTES = 64 * 1024;
export const MAX_MEMORY_TOTAL_BYTES = 256 * 1024;

/** Nearest ancestor (or itself) of `dir` holding `.git`; `dir` when there is none. */
export function findProjectRoot(dir: string): string {
  let current = resolve(dir);
  for (;;) {
    if (existsSync(join(current, ".git"))) return current;
    const parent = dirname(current);
    if (parent === current) return resolve(dir);
    current = parent;
  }
}

/** The chain's candidate files in order (existing or not). */
export function memoryCandidates(settings: MemorySettings): Array<{ scope: MemoryScope; path: string }> {
  const working = resolve(settings.workingDir);
  const root = resolve(settings.projectRoot ?? findProjectRoot(working));
  const candidates: Array<{ scope: MemoryScope; path: string }> = [];
  if (settings.userFile !== undefined) candidates.push({ scope: "user", path: resolve(settings.userFile) });
  candidates.push(
    { scope: "project", path: join(root, "AGENTS.md") },
    { scope: "project", path: join(root, ".agents", "AGENTS.md") },
  );
  const below = relative(root, working);
  if (below !== "" && !below.startsWith("..") && !below.startsWith(sep)) {
    let current = root;
    for (const part of below.split(sep)) {
      current = join(current, part);
      candidates.push({ scope: "directory", path: join(current, "AGENTS.md") });
    }
  }
  return candidates;
}

function cut(text: string, cap: number): string {
  return Buffer.from(text, "utf8")
    .subarray(0, cap)
    .toString("utf8")
    .replace(/\uFFFD$/, "");
}

/** Read the chain. */
export function readMemory(settings: MemorySettings): MemoryLoad {
  const sources: MemorySource[] = [];
  const errors: string[] = [];
  const seen = new Set<string>();
  let total = 0;
  for (const candidate of memoryCandidates(settings)) {
    let real: string;
    let bytes: number;
    try {
      real = realpathSync(candidate.path);
      const stat = statSync(real);
      if (!stat.isFile()) {
        errors.push(`${candidate.path}: not a file`);
        continue;
      }
      bytes = stat.size;
    } catch {
      continue;
    }
    if (seen.has(real)) continue;
    seen.add(real);
    let text: string;
    try {
      text = readFileSync(real, "utf8");
    } catch (error) {
      errors.push(`${candidate.path}: cannot be read: ${(error as Error).message}`);
      continue;
    }
    const room = Math.min(MAX_MEMORY_FILE_BYTES, MAX_MEMORY_TOTAL_BYTES - total);
    if (bytes > room) {
      errors.push(
        `${candidate.path}: ${bytes} bytes, only the first ${room} are used (caps: ${MAX_MEMORY_FILE_BYTES} per file, ${MAX_MEMORY_TOTAL_BYTES} in all)`,
      );
      text = cut(text, room);
    }
    total += Buffer.byteLength(text, "utf8");
    sources.push({ scope: candidate.scope, path: candidate.path, bytes, text });
  }
  return { sources, errors };
}
