/**
 * Where the worker entrypoints (`workers/*.ts`) are, both when spar runs from source
 * (`bun src/main.ts`) and inside the single binary built by `scripts/build.ts`. Owns only that
 * URL computation; it must not create workers.
 *
 * Measured with Bun 1.4.5 (`bun build --compile src/main.ts workers/turn.ts`, binary copied to
 * another directory and started there):
 * - every bundled module shares the entry's `import.meta.url`, `file:///$bunfs/root/<outfile name>`
 *   (`B:/~BUN/root/...` on Windows), so a URL made relative to this file's source location
 *   (`new URL("../../workers/turn.ts", import.meta.url)` from src/rpc/) becomes
 *   `file:///workers/turn.ts`: ModuleNotFound. The pool then kept respawning failing workers.
 * - each worker entrypoint is embedded at its path relative to the entrypoints' common directory
 *   (the repo root): `/$bunfs/root/workers/turn.js`, and a `.ts` URL there resolves to it. So
 *   `new URL("./workers/turn.ts", import.meta.url)` works in the binary.
 * - a bare string (`new Worker("./workers/turn.ts")`) resolves against the cwd from source, so it is
 *   not used.
 */

/** This module's path in the source tree; when `import.meta.url` ends with it, we run from source. */
const SOURCE_SUFFIX = "/src/rpc/worker-urls.ts";

/** The embedded root of a compiled binary, from any module URL inside it (entry or worker). */
const EMBEDDED_ROOT = /^file:\/\/\/(?:\$bunfs|[A-Za-z]:\/~BUN)\/root\//;

/**
 * The directory that holds `workers/`: the repo root from source, the embedded root in a compiled
 * binary (this module's URL there is the entry's, or a worker's when imported by a worker).
 */
function workersBase(moduleUrl: string): URL {
  if (moduleUrl.endsWith(SOURCE_SUFFIX)) return new URL("../..", moduleUrl);
  const embedded = EMBEDDED_ROOT.exec(moduleUrl);
  return new URL(embedded ? embedded[0] : "./", moduleUrl);
}

/** URL of the worker entrypoint `workers/<name>.ts`, e.g. `workerUrl("turn")`. */
export function workerUrl(name: string, moduleUrl: string = import.meta.url): URL {
  return new URL(`workers/${name}.ts`, workersBase(moduleUrl));
}
