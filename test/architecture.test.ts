/**
 * Layering, checked from the source text (docs/architecture.md#layers-and-folders, #the-import-rules): src/core is pure,
 * store/models/tools sit beside core and below runtime, runtime sits below surfaces and cli,
 * nothing ships code from test/, and there is no `export *`. Imports are found with a regex over
 * comment-stripped source, which is enough for this codebase's plain ES import syntax.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

const REPO_ROOT = resolve(import.meta.dir, "..");

interface ImportSite {
  /** Repo-relative path of the importing file, with `/` separators. */
  file: string;
  /** The specifier as written. */
  specifier: string;
  /** Repo-relative target for a relative specifier, else undefined (a package or builtin). */
  target: string | undefined;
  /** Every import of this specifier in the file is `import type` (erased: no module is loaded). */
  typeOnly: boolean;
}

function isTypeOnly(site: ImportSite): boolean {
  return site.typeOnly;
}

/** Block and line comments out, string contents kept (`http://` survives: `//` must follow a blank or line start). */
export function stripComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, " ").replace(/(^|[\s;{}])\/\/.*$/gm, "$1");
}

/** Every module specifier in static imports, `export ... from`, side-effect imports and `import()`. */
export function importSpecifiers(source: string): string[] {
  const code = stripComments(source);
  const patterns = [
    /(?:^|[\n;])\s*(?:import|export)\b[^;'"`]*?\bfrom\s*["']([^"']+)["']/g,
    /(?:^|[\n;])\s*import\s*["']([^"']+)["']/g,
    /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g,
  ];
  const found: string[] = [];
  for (const pattern of patterns) for (const match of code.matchAll(pattern)) if (match[1]) found.push(match[1]);
  return found;
}

/** The specifiers imported only as types (`import type { ... } from`), never as values in the same file. */
export function typeOnlySpecifiers(source: string): string[] {
  const code = stripComments(source);
  const typeOnly = new Set<string>();
  const valued = new Set<string>();
  for (const match of code.matchAll(/(?:^|[\n;])\s*(import|export)\s+(type\s+)?[^;'"`]*?\bfrom\s*["']([^"']+)["']/g)) {
    const specifier = match[3] ?? "";
    if (match[1] === "import" && match[2] !== undefined) typeOnly.add(specifier);
    else valued.add(specifier);
  }
  return [...typeOnly].filter((specifier) => !valued.has(specifier));
}

function toPosix(path: string): string {
  return path.split(sep).join("/");
}

function sourceFiles(folder: string): string[] {
  return [...new Bun.Glob(`${folder}/**/*.ts`).scanSync({ cwd: REPO_ROOT, onlyFiles: true })].map(toPosix).sort();
}

function importSites(file: string): ImportSite[] {
  const source = readFileSync(join(REPO_ROOT, file), "utf8");
  const typeOnly = new Set(typeOnlySpecifiers(source));
  return importSpecifiers(source).map((specifier) => ({
    file,
    specifier,
    typeOnly: typeOnly.has(specifier),
    target: specifier.startsWith(".")
      ? toPosix(relative(REPO_ROOT, resolve(REPO_ROOT, dirname(file), specifier)))
      : undefined,
  }));
}

const FILES = [...sourceFiles("src"), ...sourceFiles("workers")];
const SITES = FILES.flatMap(importSites);

function inside(path: string | undefined, folder: string): boolean {
  return path !== undefined && (path === folder || path.startsWith(`${folder}/`));
}

function describeSite(site: ImportSite): string {
  return `${site.file} imports ${JSON.stringify(site.specifier)}`;
}

/** The import sites from files under one of `from` that reach into one of `forbidden`. */
function crossings(from: readonly string[], forbidden: readonly string[]): string[] {
  return SITES.filter((site) => from.some((folder) => inside(site.file, folder)))
    .filter((site) => forbidden.some((folder) => inside(site.target, folder)))
    .map(describeSite);
}

describe("the import scanner", () => {
  test("finds every import form and ignores comments", () => {
    const sample = [
      `import { a } from "./a.ts";`,
      `import type { B } from "../b.ts";`,
      `import {\n  c,\n  type D,\n} from "./c.ts";`,
      `import "./side-effect.ts";`,
      `export { e } from "./e.ts";`,
      `export * from "./star.ts";`,
      `const lazy = await import("./lazy.ts");`,
      `import * as ns from "node:fs";`,
      `// import { gone } from "./commented.ts";`,
      `/* import { gone } from "./block.ts"; */`,
      `const url = "http://example.test/"; import { f } from "./f.ts";`,
    ].join("\n");
    expect(importSpecifiers(sample).sort()).toEqual(
      [
        "./a.ts",
        "../b.ts",
        "./c.ts",
        "./side-effect.ts",
        "./e.ts",
        "./star.ts",
        "./lazy.ts",
        "node:fs",
        "./f.ts",
      ].sort(),
    );
  });

  test("tells type-only imports from value imports of the same module", () => {
    const sample = [
      `import type { A } from "./a.ts";`,
      `import { b } from "./b.ts";`,
      `import type { C } from "./c.ts";`,
      `import { c } from "./c.ts";`,
      `import { type D, d } from "./d.ts";`,
      `export type { E } from "./e.ts";`,
    ].join("\n");
    expect(typeOnlySpecifiers(sample)).toEqual(["./a.ts"]);
  });

  test("sees the tree: src/core, src/runtime and the workers are scanned", () => {
    expect(FILES.some((file) => file.startsWith("src/core/"))).toBe(true);
    expect(FILES.some((file) => file.startsWith("src/runtime/"))).toBe(true);
    expect(FILES.some((file) => file.startsWith("workers/"))).toBe(true);
    expect(SITES.length).toBeGreaterThan(FILES.length);
  });
});

describe("layering", () => {
  test("src/core imports only src/core: no packages, no bun:*, no node:*", () => {
    const violations = SITES.filter((site) => inside(site.file, "src/core") && !inside(site.target, "src/core")).map(
      describeSite,
    );
    expect(violations).toEqual([]);
  });

  test("src/core does no I/O: no fetch( and no Bun. in code", () => {
    const violations: string[] = [];
    for (const file of FILES.filter((path) => inside(path, "src/core"))) {
      const code = stripComments(readFileSync(join(REPO_ROOT, file), "utf8"));
      code.split("\n").forEach((line, index) => {
        if (/\bfetch\s*\(|\bBun\./.test(line)) violations.push(`${file}:${index + 1}: ${line.trim()}`);
      });
    }
    expect(violations).toEqual([]);
  });

  test("src/store, src/models and src/tools do not import runtime, surfaces or cli", () => {
    expect(crossings(["src/store", "src/models", "src/tools"], ["src/runtime", "src/surfaces", "src/cli"])).toEqual([]);
  });

  test("src/net (the outbound guard) imports only src/core, src/telemetry (its client spans) and itself: not runtime, surfaces, cli or tools", () => {
    const violations = SITES.filter(
      (site) =>
        inside(site.file, "src/net") &&
        site.target !== undefined &&
        !inside(site.target, "src/core") &&
        !inside(site.target, "src/telemetry") &&
        !inside(site.target, "src/net"),
    ).map(describeSite);
    expect(violations).toEqual([]);
    expect(FILES.some((file) => file.startsWith("src/net/"))).toBe(true);
  });

  test("src/skills, src/memory, src/mcp and src/pricing do not import runtime, surfaces or cli", () => {
    const leaves = ["src/skills", "src/memory", "src/mcp", "src/pricing"];
    expect(crossings(leaves, ["src/runtime", "src/surfaces", "src/cli"])).toEqual([]);
    for (const folder of leaves) expect(FILES.some((file) => inside(file, folder))).toBe(true);
  });

  test("src/runtime does not import surfaces or cli", () => {
    expect(crossings(["src/runtime"], ["src/surfaces", "src/cli"])).toEqual([]);
  });

  test("src/rpc (the worker RPC layer) imports only itself: no runtime, channel, package or builtin", () => {
    const violations = SITES.filter((site) => inside(site.file, "src/rpc") && !inside(site.target, "src/rpc")).map(
      describeSite,
    );
    expect(violations).toEqual([]);
    expect(FILES.some((file) => file.startsWith("src/rpc/"))).toBe(true);
  });

  test("src/surfaces and src/watcher never import src/cli (the cli builds their settings; they define them)", () => {
    expect(crossings(["src/surfaces", "src/watcher"], ["src/cli"])).toEqual([]);
  });

  test("src/config (the setting vocabulary) sits below cli, surfaces, watcher and runtime: imports only core and itself", () => {
    const violations = SITES.filter(
      (site) =>
        inside(site.file, "src/config") &&
        site.target !== undefined &&
        !inside(site.target, "src/core") &&
        !inside(site.target, "src/config"),
    ).map(describeSite);
    expect(violations).toEqual([]);
    expect(FILES.some((file) => file.startsWith("src/config/"))).toBe(true);
  });

  test("src/core, src/runtime, src/surfaces and src/store never import src/svc (the workflow daemon's own layer)", () => {
    expect(crossings(["src/core", "src/runtime", "src/surfaces", "src/store"], ["src/svc"])).toEqual([]);
    expect(FILES.some((file) => file.startsWith("src/svc/"))).toBe(true);
  });

  test("src/cli is the top (parsing and dispatch): only main.ts imports it, and the daemons' compositions only its settings types", () => {
    const compositions = ["src/daemon", "src/agent", "src/svc/daemon"];
    const violations = SITES.filter((site) => inside(site.target, "src/cli") && !inside(site.file, "src/cli"))
      .filter((site) => site.file !== "src/main.ts")
      .filter((site) => !(compositions.some((folder) => inside(site.file, folder)) && isTypeOnly(site)))
      .map(describeSite);
    expect(violations).toEqual([]);
  });

  test("the shared core builder (src/daemon) imports neither daemon's own layer (src/agent, src/svc)", () => {
    expect(crossings(["src/daemon"], ["src/agent", "src/svc"])).toEqual([]);
  });

  test("src/svc, but its composition (src/svc/daemon), imports no cli, agent or daemon composition and no store: stores through core's interfaces", () => {
    const layer = SITES.filter((site) => inside(site.file, "src/svc") && !inside(site.file, "src/svc/daemon"));
    const violations = layer
      .filter((site) =>
        ["src/cli", "src/agent", "src/daemon", "src/store"].some((folder) => inside(site.target, folder)),
      )
      .map(describeSite);
    expect(violations).toEqual([]);
    expect(layer.length).toBeGreaterThan(100);
  });

  test("src/protocols (the protocols' wire shapes every end shares) imports only core, itself and packages", () => {
    const violations = SITES.filter((site) => inside(site.file, "src/protocols"))
      .filter(
        (site) =>
          site.target !== undefined && !inside(site.target, "src/core") && !inside(site.target, "src/protocols"),
      )
      .map(describeSite);
    expect(violations).toEqual([]);
    const builtins = SITES.filter(
      (site) => inside(site.file, "src/protocols") && /^(node|bun):|^bun$/.test(site.specifier),
    );
    expect(builtins.map(describeSite)).toEqual([]);
    expect(FILES.some((file) => file.startsWith("src/protocols/"))).toBe(true);
  });

  test("src/a2a-client (the A2A client both daemons use) imports only core, net, tools, telemetry, protocols and itself", () => {
    const allowed = ["src/core", "src/net", "src/tools", "src/telemetry", "src/protocols", "src/a2a-client"];
    const violations = SITES.filter((site) => inside(site.file, "src/a2a-client"))
      .filter((site) => site.target !== undefined && !allowed.some((folder) => inside(site.target, folder)))
      .map(describeSite);
    expect(violations).toEqual([]);
  });

  test("src/peers-client (call_peer and the hub registrar) imports only core, config, net, tools, telemetry and itself", () => {
    const allowed = ["src/core", "src/config", "src/net", "src/tools", "src/telemetry", "src/peers-client"];
    const violations = SITES.filter((site) => inside(site.file, "src/peers-client"))
      .filter((site) => site.target !== undefined && !allowed.some((folder) => inside(site.target, folder)))
      .map(describeSite);
    expect(FILES.some((file) => inside(file, "src/peers-client"))).toBe(true);
    expect(violations).toEqual([]);
  });

  test("src/alerts (the alert tool, D460) imports only core, net, tools, the shared rate limiter and itself", () => {
    const allowed = ["src/core", "src/net", "src/tools", "src/surfaces/http/rate-limiter.ts", "src/alerts"];
    const violations = SITES.filter((site) => inside(site.file, "src/alerts"))
      .filter((site) => site.target !== undefined && !allowed.some((folder) => inside(site.target, folder)))
      .map(describeSite);
    expect(FILES.some((file) => inside(file, "src/alerts"))).toBe(true);
    expect(violations).toEqual([]);
  });

  test("nothing in src/ or workers/ imports from test/", () => {
    expect(crossings(["src", "workers"], ["test"])).toEqual([]);
  });
});

/** The import graph of src/ over relative specifiers, type-only imports included (a circle of types is still a circle). */
function importGraph(files: readonly string[], sites: readonly ImportSite[]): Map<string, string[]> {
  const graph = new Map<string, string[]>(files.map((file) => [file, []]));
  for (const site of sites)
    if (site.target !== undefined && graph.has(site.target)) graph.get(site.file)?.push(site.target);
  return graph;
}

/** Every import circle: the strongly connected components of more than one file, or a file importing itself (Tarjan). */
export function importCircles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const order = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string): void => {
    order.set(file, order.size);
    lowest.set(file, order.get(file) ?? 0);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!order.has(next)) visit(next);
      if (onStack.has(next)) lowest.set(file, Math.min(lowest.get(file) ?? 0, lowest.get(next) ?? 0));
    }
    if (lowest.get(file) !== order.get(file)) return;
    const component: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      component.push(member);
      if (member === file) break;
    }
    if (component.length > 1 || graph.get(file)?.includes(file)) circles.push(component.sort());
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return circles;
}

describe("import circles", () => {
  test("the circle finder finds a two-file circle, a longer one and a self-import, and passes a tree", () => {
    const graph = new Map<string, string[]>([
      ["a", ["b"]],
      ["b", ["a", "c"]],
      ["c", ["d"]],
      ["d", ["e"]],
      ["e", ["c"]],
      ["f", ["f"]],
      ["g", ["a", "c"]],
    ]);
    expect(importCircles(graph)).toEqual(expect.arrayContaining([["a", "b"], ["c", "d", "e"], ["f"]]));
    expect(importCircles(graph)).toHaveLength(3);
    expect(
      importCircles(
        new Map([
          ["x", ["y"]],
          ["y", []],
        ]),
      ),
    ).toEqual([]);
  });

  test("no import circle anywhere in src/", () => {
    const files = FILES.filter((file) => inside(file, "src"));
    expect(importCircles(importGraph(files, SITES)).map((circle) => circle.join(" -> "))).toEqual([]);
  });
});

test("no `export *` anywhere in src/ or workers/", () => {
  const violations: string[] = [];
  for (const file of FILES) {
    const code = stripComments(readFileSync(join(REPO_ROOT, file), "utf8"));
    code.split("\n").forEach((line, index) => {
      if (/\bexport\s+\*/.test(line)) violations.push(`${file}:${index + 1}: ${line.trim()}`);
    });
  }
  expect(violations).toEqual([]);
});

/** The text of each call to `callee` in `code`, from its name to the matching close paren. */
function callTexts(code: string, callee: RegExp): string[] {
  const calls: string[] = [];
  for (const match of code.matchAll(callee)) {
    let depth = 0;
    const start = match.index ?? 0;
    for (let index = start + match[0].length - 1; index < code.length; index++) {
      if (code[index] === "(") depth++;
      else if (code[index] === ")" && --depth === 0) {
        calls.push(code.slice(start, index + 1));
        break;
      }
    }
  }
  return calls;
}

const SPAWN = /\bBun\.spawn(?:Sync)?\(/g;
const passesEnv = (call: string) => /\benv\s*[:,}]/.test(call);

/**
 * Bun.spawn without `env` gives the child the environment Bun read at start, which in a sealed
 * daemon (D335) holds only the kept variables; process.env and node:child_process have them all.
 */
test("every Bun.spawn in src/ and workers/ passes its env (the default is the sealed start's environment, D335)", () => {
  const sample = callTexts('x; Bun.spawn(["a", f(b)], { cwd }); Bun.spawnSync(["c"], { cwd, env })', SPAWN);
  expect(sample).toEqual(['Bun.spawn(["a", f(b)], { cwd })', 'Bun.spawnSync(["c"], { cwd, env })']);
  expect(sample.map(passesEnv)).toEqual([false, true]);
  const violations: string[] = [];
  let calls = 0;
  for (const file of FILES) {
    const code = stripComments(readFileSync(join(REPO_ROOT, file), "utf8"));
    for (const call of callTexts(code, SPAWN)) {
      calls++;
      if (!passesEnv(call)) violations.push(`${file}: ${call.slice(0, 80)}`);
    }
  }
  expect(calls).toBeGreaterThan(0);
  expect(violations).toEqual([]);
});
