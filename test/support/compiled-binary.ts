/**
 * The single binary for tests: `dist/spar`, rebuilt by scripts/build.ts when missing or older than
 * any file in src/, workers/ or the build script (built into a private file, then renamed, so a
 * concurrent run never sees a half-written binary), and copied alone into a directory.
 */
import { chmodSync, copyFileSync, existsSync, readdirSync, renameSync, statSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "./daemon.ts";

export const BINARY = join(REPO_ROOT, "dist", "spar");
/** How long a `beforeAll` building the binary may take. */
export const BUILD_TIMEOUT_MS = 180_000;

/** Newest modification time of any file under `folder` (0 when it does not exist). */
function newestMtime(folder: string): number {
  if (!existsSync(folder)) return 0;
  let newest = 0;
  for (const entry of readdirSync(folder, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

function binaryIsStale(): boolean {
  if (!existsSync(BINARY)) return true;
  const sources = Math.max(
    newestMtime(join(REPO_ROOT, "src")),
    newestMtime(join(REPO_ROOT, "workers")),
    statSync(join(REPO_ROOT, "scripts/build.ts")).mtimeMs,
    statSync(join(REPO_ROOT, "bun.lock")).mtimeMs,
  );
  return statSync(BINARY).mtimeMs < sources;
}

export async function ensureBinary(): Promise<void> {
  if (!binaryIsStale()) return;
  const partial = `${BINARY}.partial-${process.pid}`;
  const build = Bun.spawn([process.execPath, join(REPO_ROOT, "scripts/build.ts"), `--outfile=${partial}`], {
    cwd: REPO_ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([
    build.exited,
    new Response(build.stdout).text(),
    new Response(build.stderr).text(),
  ]);
  if (code !== 0) throw new Error(`scripts/build.ts exited ${code}:\n${stdout}${stderr}`);
  renameSync(partial, BINARY);
}

/** Builds the binary when stale and copies it to `dir/spar` (mode 0755); returns the copy's path. */
export async function copiedBinary(dir: string): Promise<string> {
  await ensureBinary();
  const binary = join(dir, "spar");
  copyFileSync(BINARY, binary);
  // copyFileSync keeps the mode on Linux, but say so: the copy must be executable.
  chmodSync(binary, 0o755);
  return binary;
}
