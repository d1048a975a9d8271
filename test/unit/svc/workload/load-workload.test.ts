/**
 * loadWorkload end to end over real files: the fixtures (reference Examples A and B, one per
 * dispatch shape), directory mode's rules, the empty value, the dispatch precedence, and mcp.json
 * read and cross-checked only when tool servers are wired.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type LoadWorkloadOptions, loadWorkload } from "../../../../src/svc/workload/load-workload.ts";
import { FIXTURES, copyFixture, makeTree, removeTrees, template, writeFiles } from "./temporary-tree.ts";

afterEach(removeTrees);

const NO_ROOT = "/nonexistent/etc/spar/agents";

function load(value: string, options: Partial<LoadWorkloadOptions> = {}) {
  return loadWorkload({
    value,
    cwd: FIXTURES,
    env: {},
    wireToolServers: false,
    systemConfigDir: NO_ROOT,
    ...options,
  });
}

function loaded(value: string, options: Partial<LoadWorkloadOptions> = {}) {
  const result = load(value, options);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

function refusal(value: string, options: Partial<LoadWorkloadOptions> = {}): string {
  const result = load(value, options);
  if (result.ok) throw new Error("expected a refusal");
  return result.error;
}

describe("the fixtures", () => {
  test("hello (Example A): coordinator, one specialist that may use no MCP server", () => {
    const { workload, source, mcpCatalogPath, mcpCatalog } = loaded(join(FIXTURES, "hello"));
    expect(source).toEqual({ kind: "directory", directory: join(FIXTURES, "hello") });
    expect(workload.dispatch).toBe("coordinator");
    expect(workload.budget.maxWallclockSeconds).toBe(60);
    expect(workload.specialists.map((specialist) => [specialist.name, specialist.tools.mcp])).toEqual([["helper", []]]);
    expect(workload.specialists[0]?.instruction).toBe(
      "Acknowledge the incident you are handed in one sentence, then call finish_task.",
    );
    expect(mcpCatalogPath).toBe(join(FIXTURES, "hello", "mcp.json"));
    expect(mcpCatalog).toBeUndefined();
  });

  test("a relative directory resolves against cwd", () => {
    expect(loaded("hello").workload.name).toBe("hello");
    expect(loaded("./gated").workload.name).toBe("gated");
  });

  test("gated (Example B) under echo: mcp.json not read, overrides logged", () => {
    const result = loaded("gated");
    expect(result.workload.hitl).toEqual({
      requireApproval: false,
      onMutation: "require_approval",
      changeSetTtlMs: 600_000,
    });
    expect(result.workload.toolCatalog.mcp).toEqual([{ server: "blocker" }]);
    expect(result.workload.specialists[0]).toMatchObject({
      name: "worker",
      capability: "change_executor",
      budget: { maxTurns: 5 },
    });
    expect(result.workload.edgeTrigger).toEqual({ http: { path: "/inject", auth: "bearer" } });
    expect(result.mcpCatalog).toBeUndefined();
    expect(result.notices).toEqual([
      "workload gated: tool read_status classified read-only by tool_catalog",
      "workload gated: tool apply_change classified mutating by tool_catalog",
    ]);
  });

  test("gated with tool servers wired: mcp.json parsed by the shared catalog parser, ${VAR} expanded", () => {
    const result = loaded("gated", {
      wireToolServers: true,
      env: { BLOCKER_BIN: "/opt/blocker", UAT_BLOCKER_DIR: "/tmp/blocker" },
    });
    expect(result.mcpCatalog?.servers).toEqual([
      {
        name: "blocker",
        transport: "stdio",
        command: "/opt/blocker",
        args: [],
        envMode: "inherit",
        envPassthrough: [],
        env: { UAT_BLOCKER_DIR: "/tmp/blocker" },
        overrides: {},
      },
    ]);
  });

  test("graph: spec set in name order, the classifier first SingleTurn", () => {
    const { workload, warnings } = loaded("graph");
    expect(workload.dispatch).toBe("graph");
    expect(workload.specialists.map((specialist) => specialist.name)).toEqual(["_fallback", "classifier", "disk_full"]);
    expect(workload.hitl.requireApproval).toBe(true);
    expect(warnings).toEqual([]);
  });

  test("fanout: analysts list their tools, max_concurrency kept", () => {
    const { workload } = loaded("fanout", { wireToolServers: true });
    expect(workload.dispatch).toBe("fanout");
    expect(workload.fanoutMaxConcurrency).toBe(2);
  });

  test("bounded: one SingleTurn specialist with its schema loaded", () => {
    const { workload } = loaded("bounded");
    expect(workload.dispatch).toBe("bounded");
    expect(workload.specialists[0]?.outputSchema?.path).toBe(join(FIXTURES, "bounded", "schemas", "verdict.json"));
  });
});

describe("the empty value", () => {
  test("is the trivial coordinator with no specialists, no tools, a warning", () => {
    const result = loaded("");
    expect(result.source).toEqual({ kind: "trivial" });
    expect(result.workload.name).toBe("trivial");
    expect(result.workload.dispatch).toBe("coordinator");
    expect(result.workload.specialists).toEqual([]);
    expect(result.workload.toolCatalog).toEqual({ declared: false, mcp: [], tools: [] });
    expect(result.mcpCatalogPath).toBeUndefined();
    expect(result.warnings).toEqual([
      "no --workload given: running the trivial single agent trivial_coordinator (no tools, no write gate, no bundle)",
    ]);
  });

  test("a typed --dispatch still applies, and its requirements name the missing bundle", () => {
    expect(refusal("", { dispatchFlag: "graph" })).toBe(
      'workload "trivial" (no bundle): dispatch graph (--dispatch) requires a SingleTurn classifier specialist in the roster: give one specialist mode: SingleTurn',
    );
  });
});

describe("directory mode", () => {
  test("workload.yaml is the only bundle name: a workload.yml is not read", () => {
    const root = makeTree({
      "w/workload.yml": "name: w\nspecialists: [a]\n",
      "w/specialists/a.tmpl": template("description: d"),
    });
    expect(refusal(join(root, "w"))).toBe(
      `workload directory ${root}/w has no readable workload.yaml (${root}/w/workload.yaml: cannot read (no such file))`,
    );
  });

  test("the file's name does not have to match the directory", () => {
    const root = makeTree({
      "dir/workload.yaml": "name: other\nspecialists: [a]\n",
      "dir/specialists/a.tmpl": template("description: d"),
    });
    expect(loaded(join(root, "dir")).workload.name).toBe("other");
  });

  test("specialists/ is required", () => {
    const root = makeTree({ "w/workload.yaml": "name: w\nspecialists: [a]\n" });
    expect(refusal(join(root, "w"))).toBe(
      `load specialists: ${root}/w/specialists is not a directory (it is required)`,
    );
  });

  test("a listed specialist with no file is refused", () => {
    const directory = copyFixture("hello");
    writeFiles(directory, { "workload.yaml": "name: hello\nspecialists: [helper, ghost]\n" });
    expect(refusal(directory)).toBe(
      `${directory}/workload.yaml: specialists[1]: workload "hello" references specialist "ghost" which is not loaded from ${directory}/specialists`,
    );
  });

  test("every .tmpl is in the spec set, listed or not; only the listed ones are the roster", () => {
    const directory = copyFixture("hello");
    writeFiles(directory, {
      "specialists/extra.tmpl": template("description: e\ntools: {mcp: []}"),
      "specialists/notes.txt": "x",
    });
    const { workload } = loaded(directory);
    expect(workload.specialists.map((specialist) => specialist.name)).toEqual(["extra", "helper"]);
    expect(workload.roster).toEqual(["helper"]);
  });

  test("an unlisted file counts toward bounded's exactly one", () => {
    const directory = copyFixture("bounded");
    writeFiles(directory, { "specialists/stray.tmpl": template("description: s\ntools: {mcp: []}") });
    expect(refusal(directory)).toBe(
      `workload "verdict" (${directory}/workload.yaml): dispatch bounded (workload.yaml) requires exactly one specialist, found 2 (judge, stray)`,
    );
  });

  test("a broken .tmpl fails the load, listed or not, with every line prefixed", () => {
    const directory = copyFixture("hello");
    writeFiles(directory, { "specialists/stray.tmpl": template("mode: Batch") });
    expect(refusal(directory).split("\n")).toEqual([
      `load specialists: ${directory}/specialists/stray.tmpl: description: required`,
      `load specialists: ${directory}/specialists/stray.tmpl: mode: expected one of Task, SingleTurn, got "Batch"`,
    ]);
  });

  test("two files declaring one name are refused", () => {
    const directory = copyFixture("hello");
    writeFiles(directory, { "specialists/copy.tmpl": template("name: helper\ndescription: d\ntools: {mcp: []}") });
    expect(refusal(directory)).toBe(
      `load specialists: specialist "helper" is declared twice: ${directory}/specialists/copy.tmpl and ${directory}/specialists/helper.tmpl`,
    );
  });

  test("the budget overrides of the environment do not apply", () => {
    const env = { SVC_BUDGET_MAX_COST_USD: "9", SVC_BUDGET_MAX_WALLCLOCK_SECONDS: "nonsense" };
    expect(loaded("hello", { env }).workload.budget).toEqual({ maxTurns: 0, maxWallclockSeconds: 60, maxCostUsd: 0 });
  });
});

describe("mcp.json", () => {
  test("a server the workload references but the catalog lacks is fatal when wired", () => {
    const directory = copyFixture("gated");
    writeFiles(directory, {
      "mcp.json": '{"version": 1, "servers": {"other": {"transport": "http", "url": "http://127.0.0.1:1/"}}}',
    });
    expect(refusal(directory, { wireToolServers: true })).toBe(
      `workload references MCP server "blocker" not defined in ${directory}/mcp.json`,
    );
    expect(loaded(directory, { wireToolServers: false }).mcpCatalog).toBeUndefined();
  });

  test("a missing mcp.json is fatal when wired and the bundle names servers", () => {
    const root = makeTree();
    const directory = copyFixture("gated");
    const moved = join(root, "elsewhere.json");
    renameSync(join(directory, "mcp.json"), moved);
    expect(refusal(directory, { wireToolServers: true })).toBe(
      `mcp.json ${directory}/mcp.json: required: workload "gated" names MCP servers (blocker) in tool_catalog.mcp (${directory}/mcp.json: cannot read (no such file))`,
    );
  });

  test("a bad catalog is fatal with the parser's message", () => {
    const directory = copyFixture("gated");
    writeFiles(directory, { "mcp.json": '{"version": 2, "servers": {}}' });
    expect(refusal(directory, { wireToolServers: true })).toBe(
      `mcp.json ${directory}/mcp.json: version: must be 1, not 2`,
    );
  });

  test("not read when the bundle names no server, even when wired", () => {
    expect(loaded("hello", { wireToolServers: true }).mcpCatalog).toBeUndefined();
  });
});

describe("dispatch precedence", () => {
  test("a typed --dispatch wins over the bundle", () => {
    expect(loaded("graph", { dispatchFlag: "coordinator" }).workload.dispatch).toBe("coordinator");
  });

  test("the bundle wins over the default", () => {
    expect(loaded("fanout").workload.dispatch).toBe("fanout");
  });

  test("without either it is coordinator", () => {
    expect(loaded("hello").workload.dispatch).toBe("coordinator");
  });

  test("an unknown --dispatch is refused", () => {
    expect(refusal("hello", { dispatchFlag: "swarm" })).toBe(
      '--dispatch: expected one of coordinator, graph, fanout, bounded, auto, got "swarm"',
    );
  });

  test("auto: _synthesis gives fanout, SingleTurn and _fallback give graph, else coordinator; never bounded", () => {
    expect(loaded("fanout", { dispatchFlag: "auto" }).workload.dispatch).toBe("fanout");
    expect(loaded("graph", { dispatchFlag: "auto" }).workload.dispatch).toBe("graph");
    expect(loaded("hello", { dispatchFlag: "auto" }).workload.dispatch).toBe("coordinator");
    expect(loaded("bounded", { dispatchFlag: "auto" }).workload.dispatch).toBe("coordinator");
  });

  test("auto in the bundle is resolved the same way", () => {
    const directory = copyFixture("graph");
    writeFiles(directory, { "workload.yaml": "name: g\ndispatch: auto\nspecialists: [classifier]\n" });
    expect(loaded(directory).workload.dispatch).toBe("graph");
  });

  test("graph without a _fallback loads with a warning", () => {
    const directory = copyFixture("graph");
    rmSync(join(directory, "specialists", "_fallback.tmpl"));
    writeFiles(directory, { "workload.yaml": "name: g\ndispatch: graph\nspecialists: [classifier, disk_full]\n" });
    expect(loaded(directory).warnings).toEqual([
      "workload g: graph dispatch without a _fallback specialist: a route the classifier names that matches no specialist has nowhere to go",
    ]);
  });
});
