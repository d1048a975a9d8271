/**
 * Serves one directory of static files under a path prefix (the embedded dashboard, `--ui-dir`;
 * D368). Owns the path guard: a request path is decoded once and refused (400) when it could name
 * anything but a plain file under the directory: a `..` or `.` segment, a still-encoded `%` after
 * that decoding (double encoding), a backslash, a NUL, an empty segment (`//`, an absolute path), a
 * dot-file; a file whose real path (symlinks resolved) leaves the directory is a 404 as if absent.
 * Directories are never listed. A missing file with an extension is a 404; a missing path without
 * one is the single-page app's `index.html`. Bun has already collapsed `..` and `%2e%2e` segments
 * of the request line before any handler runs; this guard is the second line for every form
 * (and the only one for those Bun leaves). Every answer says `Cache-Control: no-cache` (the
 * dashboard's files carry no content hash, so the browser revalidates) and `nosniff`.
 */
import { realpathSync, statSync } from "node:fs";
import { extname, join, sep } from "node:path";
import { Elysia } from "elysia";
import { SparError } from "../../core/errors.ts";
import { requestUrl } from "./request-url.ts";

/** Headers of every file answer (D369). */
const FILE_HEADERS = {
  "cache-control": "no-cache",
  "x-content-type-options": "nosniff",
  // The dashboard drives agents: no other site may frame it (clickjacking).
  "content-security-policy": "frame-ancestors 'none'",
} as const;

export type StaticLookup = { kind: "file"; path: string } | { kind: "missing" };

/** The directory's real path; throws when it is not an existing directory (checked at startup). */
export function staticRoot(dir: string): string {
  const real = realpathSync(dir);
  if (!statSync(real).isDirectory()) throw new Error(`${dir} is not a directory`);
  return real;
}

/** The request path below the prefix, decoded once; a 400 naming the form when it is refused. */
export function decodeStaticPath(rawRest: string): string[] {
  const refuse = (why: string) => {
    throw new SparError("bad_request", `path refused: ${why}`);
  };
  if (rawRest.includes("\\")) refuse("a backslash");
  let decoded = "";
  try {
    decoded = decodeURIComponent(rawRest);
  } catch {
    refuse("malformed percent-encoding");
  }
  if (decoded.includes("\0")) refuse("a NUL byte");
  if (decoded.includes("\\")) refuse("an encoded backslash");
  if (/%[0-9a-f]{2}/i.test(decoded)) refuse("double percent-encoding");
  if (decoded === "") return [];
  const segments = decoded.split("/");
  if (segments[segments.length - 1] === "") segments.pop();
  for (const segment of segments) {
    if (segment === "") refuse("an empty segment or an absolute path");
    if (segment === "." || segment === "..") refuse(`a ${JSON.stringify(segment)} segment`);
    if (segment.startsWith(".")) refuse("a hidden file");
  }
  return segments;
}

/** Whether `path` is `root` or below it. */
function inside(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** A regular file under `root` (real paths compared), or undefined. */
function containedFile(root: string, candidate: string): string | undefined {
  let real: string;
  try {
    real = realpathSync(candidate);
  } catch {
    return undefined;
  }
  if (!inside(root, real)) return undefined;
  try {
    return statSync(real).isFile() ? real : undefined;
  } catch {
    return undefined;
  }
}

/** What `segments` names under `root`: the file, `index.html` for an extension-less miss, else missing. */
export function lookupStatic(root: string, segments: readonly string[]): StaticLookup {
  const found = segments.length === 0 ? undefined : containedFile(root, join(root, ...segments));
  if (found !== undefined) return { kind: "file", path: found };
  const last = segments[segments.length - 1] ?? "";
  if (extname(last) !== "") return { kind: "missing" };
  const index = containedFile(root, join(root, "index.html"));
  return index === undefined ? { kind: "missing" } : { kind: "file", path: index };
}

function fileResponse(path: string, head: boolean): Response {
  const file = Bun.file(path);
  const headers = { ...FILE_HEADERS, "content-type": file.type, "content-length": String(file.size) };
  return new Response(head ? null : file, { status: 200, headers });
}

/**
 * The routes: `<prefix>` answers 301 to `<prefix>/`; GET and HEAD `<prefix>/*` serve the
 * directory `root` (a real path, staticRoot) as the module header says.
 */
export function staticDirectory(prefix: string, root: string) {
  const serve = (request: Request) => {
    const raw = requestUrl(request).pathname.slice(prefix.length + 1);
    const found = lookupStatic(root, decodeStaticPath(raw));
    if (found.kind === "missing")
      throw new SparError(
        "not_found",
        `not found: ${prefix}/${raw.slice(0, 200)} (no such file under the UI directory)`,
      );
    return fileResponse(found.path, request.method === "HEAD");
  };
  const redirect = () => new Response(null, { status: 301, headers: { location: `${prefix}/` } });
  return new Elysia({ name: "spar.static-directory", seed: [prefix, root] })
    .get(prefix, redirect, { detail: { hide: true } })
    .head(prefix, redirect, { detail: { hide: true } })
    .get(`${prefix}/*`, ({ request }) => serve(request), { detail: { hide: true } })
    .head(`${prefix}/*`, ({ request }) => serve(request), { detail: { hide: true } });
}
