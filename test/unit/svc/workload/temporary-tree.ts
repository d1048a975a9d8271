/**
 * Test support: a directory tree from a map of relative path to file text, under the system temp
 * folder, removed by `removeTrees()` (call it in afterEach).
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

const created: string[] = [];

export const FIXTURES = resolve(import.meta.dir, "../../../fixtures/workloads");

/** A fresh temp directory holding `files` (paths relative to it; a trailing `/` makes an empty folder). */
export function makeTree(files: Record<string, string> = {}): string {
  const root = mkdtempSync(join(tmpdir(), "spar-workload-"));
  created.push(root);
  writeFiles(root, files);
  return root;
}

export function writeFiles(root: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    if (path.endsWith("/")) {
      mkdirSync(join(root, path), { recursive: true });
      continue;
    }
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
}

/** A temp copy of a fixture workload directory, to break one file of. */
export function copyFixture(name: string): string {
  const root = makeTree();
  cpSync(join(FIXTURES, name), join(root, name), { recursive: true });
  return join(root, name);
}

export function removeTrees(): void {
  for (const root of created.splice(0)) rmSync(root, { recursive: true, force: true });
}

/** A specialist's text from its front matter lines and body. */
export function template(frontMatter: string, body = "Do the work, then call finish_task."): string {
  return `---\n${frontMatter}\n---\n${body}\n`;
}
