/**
 * Builds the single binary `dist/spar` with `bun build --compile` (Bun.build's JS API): the entry
 * src/main.ts plus every worker entrypoint `workers/*.ts`, found by glob so a new worker is
 * embedded without editing this script (a worker that is not an entrypoint is ModuleNotFound in
 * the binary). Prints the output path, its size and the build time.
 *
 * Layout inside the binary (src/runtime/worker-urls.ts depends on it): the entry sits at
 * `/$bunfs/root/<outfile name>`, the workers at their path relative to the entrypoints' common
 * directory, the repo root: `/$bunfs/root/workers/<name>.js`.
 *
 * Usage: bun scripts/build.ts [--outfile=PATH]
 */
import { rmSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";

const REPO_ROOT = resolve(import.meta.dir, "..");
export const DEFAULT_OUTFILE = join(REPO_ROOT, "dist", "spar");

/** The entrypoints: src/main.ts first, then the workers in a stable order. */
export function entrypoints(root: string = REPO_ROOT): string[] {
  const workers = [...new Bun.Glob("workers/*.ts").scanSync({ cwd: root, onlyFiles: true })].sort();
  return [join(root, "src/main.ts"), ...workers.map((path) => join(root, path))];
}

export interface BuildResult {
  outfile: string;
  bytes: number;
  milliseconds: number;
}

export async function buildBinary(outfile: string = DEFAULT_OUTFILE): Promise<BuildResult> {
  const started = performance.now();
  const output = await Bun.build({
    entrypoints: entrypoints(),
    root: REPO_ROOT,
    target: "bun",
    // Embedded in the binary: stack traces name src/ files and lines. Bun 1.4.5 also writes the maps
    // next to the binary; those copies are not needed and are removed below.
    sourcemap: "inline",
    // Each dynamic import its own chunk, parsed only when imported: a start that needs little (the
    // first start of the process seal, D335, which executes the binary again; `--version`) does not
    // parse the whole bundle. Measured: `spar --version` 138 ms in one chunk, 22 ms split.
    splitting: true,
    compile: {
      outfile,
      // The daemon takes its configuration from its own file, env and flags (docs/configuration.md):
      // it must not pick up a `.env` or `bunfig.toml` from whatever directory it is started in.
      autoloadDotenv: false,
      autoloadBunfig: false,
      // Bun's header limit above the daemon's own (src/surfaces/http/header-limit.ts), so a
      // request with too large headers gets the daemon's JSON 431, not Bun's bodiless one.
      execArgv: ["--max-http-header-size=65536"],
    },
  });
  if (!output.success) {
    const messages = output.logs.map((log) => String(log)).join("\n");
    throw new Error(`build failed:\n${messages}`);
  }
  for (const artifact of output.outputs) if (artifact.kind === "sourcemap") rmSync(artifact.path, { force: true });
  return { outfile, bytes: statSync(outfile).size, milliseconds: performance.now() - started };
}

function parseOutfile(args: readonly string[]): string {
  for (const arg of args) {
    if (arg.startsWith("--outfile=")) return resolve(arg.slice("--outfile=".length));
    throw new Error(`unknown argument ${JSON.stringify(arg)} (usage: bun scripts/build.ts [--outfile=PATH])`);
  }
  return DEFAULT_OUTFILE;
}

if (import.meta.main) {
  try {
    const result = await buildBinary(parseOutfile(process.argv.slice(2)));
    const megabytes = (result.bytes / 1024 / 1024).toFixed(1);
    const shown = relative(process.cwd(), result.outfile) || result.outfile;
    process.stdout.write(
      `built ${shown} (${megabytes} MiB, ${result.bytes} bytes) in ${(result.milliseconds / 1000).toFixed(1)} s\n`,
    );
    process.stdout.write(
      `entrypoints: ${entrypoints()
        .map((path) => relative(REPO_ROOT, path))
        .join(", ")}\n`,
    );
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
