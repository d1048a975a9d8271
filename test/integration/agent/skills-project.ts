/**
 * A temporary project for the skills, memory and reload tests: a `.git` marker (the project
 * root), AGENTS.md files at every scope, a HOME with `~/.agents/AGENTS.md`, and skill bundles
 * under `.agents/skills/`. Files are written with `put`, relative to the project.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { tempDir } from "../../support/daemon.ts";

export interface Project {
  root: string;
  home: string;
  /** Write a file under the project (directories made). */
  put(path: string, text: string): string;
  /** Write a file under HOME. */
  putHome(path: string, text: string): string;
}

function write(path: string, text: string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return path;
}

export function makeProject(): Project {
  const base = tempDir("spar-knowledge-");
  const root = join(base, "project");
  const home = join(base, "home");
  mkdirSync(join(root, ".git"), { recursive: true });
  mkdirSync(home, { recursive: true });
  return {
    root,
    home,
    put: (path, text) => write(join(root, path), text),
    putHome: (path, text) => write(join(home, path), text),
  };
}

export function skillFile(name: string, description: string, body: string): string {
  return `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`;
}
