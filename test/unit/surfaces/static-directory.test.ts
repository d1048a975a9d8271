import { expect, test } from "bun:test";
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { decodeStaticPath, lookupStatic, staticRoot } from "../../../src/surfaces/http/static-directory.ts";
import { tempDir } from "../../support/daemon.ts";

/** The refusal's message, or "accepted: <segments>". */
function decoded(raw: string): string {
  try {
    return `accepted: ${decodeStaticPath(raw).join("|")}`;
  } catch (error) {
    return (error as Error).message;
  }
}

test("the path guard refuses every form that could leave the directory, after one decoding", () => {
  expect(decoded("")).toBe("accepted: ");
  expect(decoded("a/b.js")).toBe("accepted: a|b.js");
  expect(decoded("dir/")).toBe("accepted: dir");
  expect(decoded("a%20b.css")).toBe("accepted: a b.css");
  // Forms Bun collapses before routing, refused here too (a second line).
  expect(decoded("../x")).toBe('path refused: a ".." segment');
  expect(decoded("a/%2e%2e/x")).toBe('path refused: a ".." segment');
  expect(decoded("./x")).toBe('path refused: a "." segment');
  expect(decoded("a\\..\\x")).toBe("path refused: a backslash");
  expect(decoded("%252e%252e/x")).toBe("path refused: double percent-encoding");
  expect(decoded("..%5cx")).toBe("path refused: an encoded backslash");
  expect(decoded("%2fetc/passwd")).toBe("path refused: an empty segment or an absolute path");
  expect(decoded("a//b")).toBe("path refused: an empty segment or an absolute path");
  expect(decoded("x%00.js")).toBe("path refused: a NUL byte");
  expect(decoded("%E0%A4%A")).toBe("path refused: malformed percent-encoding");
  expect(decoded(".git/config")).toBe("path refused: a hidden file");
});

test("lookup: files inside, index.html for an extension-less miss, missing otherwise; symlinks out are absent", () => {
  const base = tempDir("spar-static-");
  const root = join(base, "site");
  mkdirSync(join(root, "sub"), { recursive: true });
  writeFileSync(join(root, "index.html"), "i");
  writeFileSync(join(root, "sub", "a.css"), "a");
  writeFileSync(join(base, "out.txt"), "o");
  symlinkSync(join(base, "out.txt"), join(root, "out.txt"));
  symlinkSync(join(root, "sub", "a.css"), join(root, "in.css"));
  const real = staticRoot(root);
  const index = realpathSync(join(root, "index.html"));
  expect(lookupStatic(real, [])).toEqual({ kind: "file", path: index });
  expect(lookupStatic(real, ["sub", "a.css"])).toEqual({
    kind: "file",
    path: realpathSync(join(root, "sub", "a.css")),
  });
  expect(lookupStatic(real, ["in.css"])).toEqual({ kind: "file", path: realpathSync(join(root, "sub", "a.css")) });
  expect(lookupStatic(real, ["settings", "agents"])).toEqual({ kind: "file", path: index });
  expect(lookupStatic(real, ["sub"])).toEqual({ kind: "file", path: index });
  expect(lookupStatic(real, ["nope.js"])).toEqual({ kind: "missing" });
  expect(lookupStatic(real, ["out.txt"])).toEqual({ kind: "missing" });
  expect(() => staticRoot(join(root, "index.html"))).toThrow("is not a directory");
});
