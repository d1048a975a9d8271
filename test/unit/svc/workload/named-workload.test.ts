/**
 * Name mode (reference 1.1, 1.2 with spar's names): which `.agents` root wins, that roots are never
 * merged, the flat scans and their fatal errors, the not-found message, the remote agents, and the
 * budget overrides that apply in this mode only. Every root is a temp directory.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type LoadWorkloadOptions, loadWorkload } from "../../../../src/svc/workload/load-workload.ts";
import { makeTree, removeTrees, template, writeFiles } from "./temporary-tree.ts";

afterEach(removeTrees);

const HELPER = template("description: Helps.\ntools: {mcp: []}");
const BUNDLE = "name: hello\nspecialists: [helper]\nbudget: {max_cost_usd: 2, max_wallclock_seconds: 60}\n";

/** A config root with one bundle and its specialist, plus `extra` files. */
function agentsRoot(extra: Record<string, string> = {}): string {
  return makeTree({ "workloads/hello.yaml": BUNDLE, "specialists/helper.tmpl": HELPER, ...extra });
}

function load(value: string, options: Partial<LoadWorkloadOptions> & { cwd: string }) {
  return loadWorkload({ value, env: {}, wireToolServers: false, systemConfigDir: "/nonexistent/etc", ...options });
}

function loaded(value: string, options: Partial<LoadWorkloadOptions> & { cwd: string }) {
  const result = load(value, options);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

function refusal(value: string, options: Partial<LoadWorkloadOptions> & { cwd: string }): string {
  const result = load(value, options);
  if (result.ok) throw new Error("expected a refusal");
  return result.error;
}

describe("which root", () => {
  test("SVC_CONFIG_DIR first; the others are ignored, never merged, and a warning says so", () => {
    const explicit = agentsRoot();
    const cwd = makeTree({
      ".agents/workloads/other.yaml": "name: other\nspecialists: [x]\n",
      ".agents/specialists/x.tmpl": HELPER,
    });
    const result = loaded("hello", { cwd, env: { SVC_CONFIG_DIR: explicit } });
    expect(result.source).toEqual({
      kind: "name",
      root: explicit,
      rootSource: "SVC_CONFIG_DIR",
      file: join(explicit, "workloads/hello.yaml"),
    });
    expect(result.notices).toEqual([`config: using .agents root ${explicit} (source SVC_CONFIG_DIR)`]);
    expect(result.warnings).toEqual([
      `config: ignoring .agents root ${cwd}/.agents (source cwd): ${explicit} wins and roots are never merged`,
    ]);
    expect(refusal("other", { cwd, env: { SVC_CONFIG_DIR: explicit } })).toContain("available: [hello]");
  });

  test("SVC_CONFIG_DIR that is not a directory is fatal, with no fall-through", () => {
    const cwd = makeTree({ ".agents/workloads/hello.yaml": BUNDLE, ".agents/specialists/helper.tmpl": HELPER });
    expect(refusal("hello", { cwd, env: { SVC_CONFIG_DIR: "/nonexistent/agents" } })).toBe(
      '--workload "hello" is not a directory, and as a workload name: config: SVC_CONFIG_DIR=/nonexistent/agents is not a directory',
    );
  });

  test("./.agents in cwd before the user config directory", () => {
    const cwd = makeTree({ ".agents/workloads/hello.yaml": BUNDLE, ".agents/specialists/helper.tmpl": HELPER });
    const home = makeTree({ ".config/spar/agents/workloads/x.yaml": "name: x\nspecialists: [helper]\n" });
    const result = loaded("hello", { cwd, env: { HOME: home } });
    expect(result.source).toMatchObject({ root: join(cwd, ".agents"), rootSource: "cwd" });
    expect(result.warnings).toEqual([
      `config: ignoring .agents root ${home}/.config/spar/agents (source user): ${cwd}/.agents wins and roots are never merged`,
    ]);
  });

  test("$XDG_CONFIG_HOME/spar/agents, else ~/.config/spar/agents", () => {
    const cwd = makeTree();
    const xdg = makeTree({ "spar/agents/workloads/hello.yaml": BUNDLE, "spar/agents/specialists/helper.tmpl": HELPER });
    expect(loaded("hello", { cwd, env: { XDG_CONFIG_HOME: xdg, HOME: "/nonexistent" } }).source).toMatchObject({
      root: join(xdg, "spar/agents"),
      rootSource: "user",
    });
    const home = makeTree({
      ".config/spar/agents/workloads/hello.yaml": BUNDLE,
      ".config/spar/agents/specialists/helper.tmpl": HELPER,
    });
    expect(loaded("hello", { cwd, env: { HOME: home } }).source).toMatchObject({
      root: join(home, ".config/spar/agents"),
      rootSource: "user",
    });
  });

  test("the system directory last", () => {
    const system = agentsRoot();
    expect(loaded("hello", { cwd: makeTree(), systemConfigDir: system }).source).toMatchObject({
      root: system,
      rootSource: "system",
    });
  });

  test("no root at all: a mistyped directory is named, and every place looked at", () => {
    const cwd = makeTree();
    expect(refusal("./helo", { cwd, env: { HOME: "/nonexistent/home" } })).toBe(
      `--workload "./helo" is not a directory, and as a workload name: config: no .agents root found (set SVC_CONFIG_DIR or create one of: [${cwd}/.agents /nonexistent/home/.config/spar/agents /nonexistent/etc])`,
    );
  });

  test("an empty root: the workload is not found and nothing is available", () => {
    const root = makeTree({ "workloads/": "" });
    const result = load("hello", { cwd: makeTree(), env: { SVC_CONFIG_DIR: root } });
    expect(result).toEqual({
      ok: false,
      error: `workload "hello" not found in config root ${root} (source SVC_CONFIG_DIR; available: []) and it is not a directory path`,
    });
  });
});

describe("inside the root", () => {
  test("the bundle is found by its name: field, not its file name; only listed specialists, in roster order", () => {
    const root = agentsRoot({
      "workloads/any-file-name.yml": "name: pair\nspecialists: [second, helper]\n",
      "specialists/second.tmpl": template("description: Second.\ntools: {mcp: []}"),
    });
    const { workload } = loaded("pair", { cwd: makeTree(), env: { SVC_CONFIG_DIR: root } });
    expect(workload.specialists.map((specialist) => specialist.name)).toEqual(["second", "helper"]);
  });

  test("not found lists what is available", () => {
    const root = agentsRoot({ "workloads/b.yaml": "name: beta\nspecialists: [helper]\n" });
    expect(refusal("gamma", { cwd: makeTree(), env: { SVC_CONFIG_DIR: root } })).toBe(
      `workload "gamma" not found in config root ${root} (source SVC_CONFIG_DIR; available: [beta hello]) and it is not a directory path`,
    );
  });

  test("scans are flat: a bundle in a subfolder is not seen", () => {
    const root = agentsRoot({ "workloads/nested/deep.yaml": "name: deep\nspecialists: [helper]\n" });
    expect(refusal("deep", { cwd: makeTree(), env: { SVC_CONFIG_DIR: root } })).toContain("available: [hello]");
  });

  test("two bundles with one name are fatal", () => {
    const root = agentsRoot({ "workloads/copy.yml": BUNDLE });
    expect(refusal("hello", { cwd: makeTree(), env: { SVC_CONFIG_DIR: root } })).toBe(
      `workload "hello" is declared twice: ${root}/workloads/copy.yml and ${root}/workloads/hello.yaml`,
    );
  });

  test("two specialists with one name are fatal", () => {
    const root = agentsRoot({ "specialists/copy.tmpl": template("name: helper\ndescription: d") });
    expect(refusal("hello", { cwd: makeTree(), env: { SVC_CONFIG_DIR: root } })).toBe(
      `specialist "helper" is declared twice: ${root}/specialists/copy.tmpl and ${root}/specialists/helper.tmpl`,
    );
  });

  test("any bundle naming a missing specialist is fatal, even one not asked for", () => {
    const root = agentsRoot({ "workloads/broken.yaml": "name: broken\nspecialists: [ghost]\n" });
    expect(refusal("hello", { cwd: makeTree(), env: { SVC_CONFIG_DIR: root } })).toBe(
      `${root}/workloads/broken.yaml: specialists[0]: workload "broken" names specialist "ghost", not found in ${root}/specialists`,
    );
  });

  test("every specialist is validated, listed or not", () => {
    const root = agentsRoot({ "specialists/bad.tmpl": template("description: d\ncapability: root") });
    expect(refusal("hello", { cwd: makeTree(), env: { SVC_CONFIG_DIR: root } })).toBe(
      `${root}/specialists/bad.tmpl: capability: expected one of read_only, change_executor, got "root"`,
    );
  });

  test("every bundle is validated, asked for or not", () => {
    const root = agentsRoot({ "workloads/bad.yaml": "name: bad\nspecialists: [helper]\nhitl: {on_mutation: yes}\n" });
    expect(refusal("hello", { cwd: makeTree(), env: { SVC_CONFIG_DIR: root } })).toBe(
      `${root}/workloads/bad.yaml: hitl.on_mutation: expected one of require_approval, apply, dry_run, got "yes"`,
    );
  });

  test("mcp.json is the root's", () => {
    const root = agentsRoot();
    expect(loaded("hello", { cwd: makeTree(), env: { SVC_CONFIG_DIR: root } }).mcpCatalogPath).toBe(
      join(root, "mcp.json"),
    );
  });
});

describe("remote agents", () => {
  test("a2a/*.yaml and *.yml are parsed", () => {
    const root = agentsRoot({
      "a2a/billing.yaml":
        "name: billing\nagent_card_url: https://billing.test/.well-known/agent-card.json\nskills: [refund]\nauth: {type: bearer, token_env: BILLING_TOKEN}\ntimeout_seconds: 30\n",
      "a2a/search.yml": "name: search\nendpoint: http://127.0.0.1:7780/a2a\n",
    });
    expect(loaded("hello", { cwd: makeTree(), env: { SVC_CONFIG_DIR: root } }).remoteAgents).toEqual([
      {
        name: "billing",
        agentCardUrl: "https://billing.test/.well-known/agent-card.json",
        skills: ["refund"],
        auth: { type: "bearer", tokenEnv: "BILLING_TOKEN" },
        timeoutSeconds: 30,
        file: join(root, "a2a/billing.yaml"),
      },
      { name: "search", endpoint: "http://127.0.0.1:7780/a2a", skills: [], file: join(root, "a2a/search.yml") },
    ]);
  });

  test("a bad registration is fatal", () => {
    const root = agentsRoot({ "a2a/x.yaml": "name: x\nendpoint: ftp://x.test/\n" });
    expect(refusal("hello", { cwd: makeTree(), env: { SVC_CONFIG_DIR: root } })).toBe(
      `${root}/a2a/x.yaml: endpoint: expected an http or https URL, got "ftp://x.test/"`,
    );
    writeFiles(root, { "a2a/x.yaml": "name: x\nskills: [a]\n" });
    expect(refusal("hello", { cwd: makeTree(), env: { SVC_CONFIG_DIR: root } })).toBe(
      `${root}/a2a/x.yaml: endpoint: required: give endpoint or agent_card_url`,
    );
  });

  test("two registrations with one name are fatal", () => {
    const root = agentsRoot({
      "a2a/a.yaml": "name: x\nendpoint: http://a.test/\n",
      "a2a/b.yaml": "name: x\nendpoint: http://b.test/\n",
    });
    expect(refusal("hello", { cwd: makeTree(), env: { SVC_CONFIG_DIR: root } })).toBe(
      `a2a agent "x" is declared twice: ${root}/a2a/a.yaml and ${root}/a2a/b.yaml`,
    );
  });
});

describe("budget overrides (name mode only)", () => {
  test("SVC_BUDGET_MAX_COST_USD and SVC_BUDGET_MAX_WALLCLOCK_SECONDS replace the bundle's values", () => {
    const root = agentsRoot();
    const env = { SVC_CONFIG_DIR: root, SVC_BUDGET_MAX_COST_USD: "0.75", SVC_BUDGET_MAX_WALLCLOCK_SECONDS: "15" };
    expect(loaded("hello", { cwd: makeTree(), env }).workload.budget).toEqual({
      maxTurns: 0,
      maxWallclockSeconds: 15,
      maxCostUsd: 0.75,
    });
  });

  test("empty values are unset", () => {
    const env = { SVC_CONFIG_DIR: agentsRoot(), SVC_BUDGET_MAX_COST_USD: "", SVC_BUDGET_MAX_WALLCLOCK_SECONDS: "" };
    expect(loaded("hello", { cwd: makeTree(), env }).workload.budget.maxCostUsd).toBe(2);
  });

  const malformed: [string, string, string][] = [
    ["SVC_BUDGET_MAX_COST_USD", "-1", 'SVC_BUDGET_MAX_COST_USD: expected a non-negative number, got "-1"'],
    ["SVC_BUDGET_MAX_COST_USD", "two", 'SVC_BUDGET_MAX_COST_USD: expected a non-negative number, got "two"'],
    [
      "SVC_BUDGET_MAX_WALLCLOCK_SECONDS",
      "1.5",
      'SVC_BUDGET_MAX_WALLCLOCK_SECONDS: expected a non-negative integer, got "1.5"',
    ],
    [
      "SVC_BUDGET_MAX_WALLCLOCK_SECONDS",
      "-3",
      'SVC_BUDGET_MAX_WALLCLOCK_SECONDS: expected a non-negative integer, got "-3"',
    ],
  ];
  for (const [name, value, message] of malformed)
    test(`${name}=${value} is fatal`, () => {
      expect(refusal("hello", { cwd: makeTree(), env: { SVC_CONFIG_DIR: agentsRoot(), [name]: value } })).toBe(message);
    });
});
