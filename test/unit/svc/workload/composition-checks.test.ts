/**
 * The static startup refusals (reference 1.5 "Capability split", "Other startup refusals", 1.7):
 * each dispatch shape's requirements, the capability split, a sub-agent named like a mutating tool,
 * the planner with a change executor, monitor tools a specialist can reach. Workloads are written
 * to temp directories and loaded through loadWorkload, so each refusal is checked as the operator
 * reads it.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { compositionProblems, reachableTools } from "../../../../src/svc/workload/composition-checks.ts";
import { loadWorkload } from "../../../../src/svc/workload/load-workload.ts";
import { mutationClass } from "../../../../src/svc/workload/tool-mutation.ts";
import { makeTree, removeTrees, template } from "./temporary-tree.ts";

afterEach(removeTrees);

/** A workload directory: the bundle's YAML and specialist name -> front matter. */
function workloadDirectory(bundle: string, specialists: Record<string, string>): string {
  const files: Record<string, string> = { "w/workload.yaml": bundle };
  for (const [name, frontMatter] of Object.entries(specialists))
    files[`w/specialists/${name}.tmpl`] = template(frontMatter);
  return join(makeTree(files), "w");
}

function load(bundle: string, specialists: Record<string, string>, dispatchFlag?: string) {
  const directory = workloadDirectory(bundle, specialists);
  const result = loadWorkload({
    value: directory,
    cwd: "/",
    env: {},
    wireToolServers: false,
    ...(dispatchFlag === undefined ? {} : { dispatchFlag }),
  });
  return { directory, result };
}

/** The refusal lines without the `workload "w" (<file>): ` prefix (each must carry it), the directory as `<dir>`. */
function problems(bundle: string, specialists: Record<string, string>, dispatchFlag?: string): string[] {
  const { directory, result } = load(bundle, specialists, dispatchFlag);
  if (result.ok) throw new Error("expected a refusal");
  const prefix = `workload "w" (${directory}/workload.yaml): `;
  return result.error
    .split("\n")
    .map((line) => (line.startsWith(prefix) ? line.slice(prefix.length) : `UNPREFIXED ${line}`))
    .map((line) => line.replaceAll(directory, "<dir>"));
}

function accepted(bundle: string, specialists: Record<string, string>, dispatchFlag?: string) {
  const { result } = load(bundle, specialists, dispatchFlag);
  if (!result.ok) throw new Error(result.error);
  return result.value.workload;
}

const NO_TOOLS = "tools: {mcp: []}";
const CATALOG = `tool_catalog:
  mcp: [{server: kube}]
  tools:
    - {name: get_pods, mutating: false}
    - {name: delete_pod, mutating: true}
`;
const FIX = "Fix: list only read-only tools, write mcp: [], or declare capability: change_executor";

describe("graph", () => {
  test("needs a SingleTurn classifier", () => {
    expect(problems("name: w\ndispatch: graph\nspecialists: [a]\n", { a: `description: a\n${NO_TOOLS}` })).toEqual([
      "dispatch graph (workload.yaml) requires a SingleTurn classifier specialist in the roster: give one specialist mode: SingleTurn",
    ]);
  });

  test("the flag names itself as the origin", () => {
    expect(problems("name: w\nspecialists: [a]\n", { a: `description: a\n${NO_TOOLS}` }, "graph")[0]).toStartWith(
      "dispatch graph (--dispatch) requires",
    );
  });

  test("the classifier is the first SingleTurn in spec order", async () => {
    const { graphClassifier } = await import("../../../../src/svc/workload/dispatch-shape.ts");
    const workload = accepted("name: w\ndispatch: graph\nspecialists: [b_router, a_router, _fallback]\n", {
      b_router: "description: b\nmode: SingleTurn",
      a_router: "description: a\nmode: SingleTurn",
      _fallback: `description: f\n${NO_TOOLS}`,
    });
    expect(graphClassifier(workload.specialists)?.name).toBe("a_router");
  });
});

describe("fanout", () => {
  test("needs _synthesis", () => {
    expect(problems("name: w\ndispatch: fanout\nspecialists: [a]\n", { a: `description: a\n${NO_TOOLS}` })).toEqual([
      "dispatch fanout (workload.yaml) requires a specialist named _synthesis: it merges the analysts' reports",
    ]);
  });

  test("analysts must be read-only and list their tools", () => {
    expect(
      problems(`name: w\ndispatch: fanout\nspecialists: [writer, lazy, whole, _synthesis]\n${CATALOG}`, {
        writer: "description: w\ncapability: change_executor\ntools: {mcp: [{server: kube, tools: [get_pods]}]}",
        lazy: "description: l\ntools: {builtin: []}",
        whole: "description: w\ntools: {mcp: [{server: kube}]}",
        _synthesis: `description: s\n${NO_TOOLS}`,
      }),
    ).toEqual([
      'fanout analyst "lazy" must list its tools: give every tools.mcp entry a tools: list, or write mcp: []',
      'fanout analyst "whole" must list its tools: give every tools.mcp entry a tools: list, or write mcp: []',
      'fanout analyst "writer" must be read-only (it has capability: change_executor): a fan-out roster only reads',
      `read-only specialist "lazy" has no tools.mcp, so it inherits every tool of the workload's tool_catalog, mutating ones included. ${FIX}`,
      `read-only specialist "whole" is granted the whole MCP server "kube" (tools.mcp[0] has no tools:), mutating tools included. ${FIX}`,
    ]);
  });

  test("a SingleTurn specialist is not an analyst", () => {
    const workload = accepted("name: w\ndispatch: fanout\nspecialists: [a, quick, _synthesis]\n", {
      a: `description: a\n${NO_TOOLS}`,
      quick: "description: q\nmode: SingleTurn",
      _synthesis: `description: s\n${NO_TOOLS}`,
    });
    expect(workload.dispatch).toBe("fanout");
  });
});

describe("bounded", () => {
  test("exactly one specialist", () => {
    expect(
      problems("name: w\ndispatch: bounded\nspecialists: [a, b]\n", {
        a: "description: a\nmode: SingleTurn",
        b: "description: b\nmode: SingleTurn",
      }),
    ).toEqual(["dispatch bounded (workload.yaml) requires exactly one specialist, found 2 (a, b)"]);
  });

  test("SingleTurn, with an output_schema, planner off", () => {
    expect(
      problems("name: w\ndispatch: bounded\nspecialists: [a]\nplanner: {enabled: true}\n", {
        a: `description: a\n${NO_TOOLS}`,
      }),
    ).toEqual([
      'bounded specialist "a" must be mode: SingleTurn (one model call), not Task',
      'bounded specialist "a" must declare an output_schema: its reply is validated against it',
      "dispatch bounded cannot run with planner.enabled: true: turn the planner off",
    ]);
  });
});

describe("the capability split", () => {
  test("a read-only Task specialist naming a mutating tool in tools.mcp or tools.builtin", () => {
    expect(
      problems(`name: w\nspecialists: [a]\n${CATALOG}`, {
        a: "description: a\ntools: {mcp: [{server: kube, tools: [get_pods, delete_pod, unlisted]}], builtin: [bash, finish_task]}",
      }),
    ).toEqual([
      `read-only specialist "a" can reach the mutating tool "delete_pod" (tools.mcp[0].tools). ${FIX}`,
      `read-only specialist "a" can reach the mutating tool "unlisted" (tools.mcp[0].tools). ${FIX}`,
      `read-only specialist "a" can reach the mutating tool "bash" (tools.builtin). ${FIX}`,
    ]);
  });

  test("a whole server, or no tools.mcp under a tool_catalog", () => {
    expect(
      problems(`name: w\nspecialists: [a, b]\n${CATALOG}`, {
        a: "description: a\ntools: {mcp: [{server: kube}]}",
        b: "description: b",
      }),
    ).toEqual([
      `read-only specialist "a" is granted the whole MCP server "kube" (tools.mcp[0] has no tools:), mutating tools included. ${FIX}`,
      `read-only specialist "b" has no tools.mcp, so it inherits every tool of the workload's tool_catalog, mutating ones included. ${FIX}`,
    ]);
  });

  test("each fix is accepted: read-only tools only, mcp: [], change_executor; SingleTurn never gets tools", () => {
    const workload = accepted(`name: w\nspecialists: [a, b, c, d]\n${CATALOG}`, {
      a: "description: a\ntools: {mcp: [{server: kube, tools: [get_pods]}]}",
      b: `description: b\n${NO_TOOLS}`,
      c: "description: c\ncapability: change_executor",
      d: "description: d\nmode: SingleTurn",
    });
    expect(workload.specialists.map((specialist) => specialist.name)).toEqual(["a", "b", "c", "d"]);
  });

  test("no tools.mcp without a tool_catalog is fine (nothing to inherit)", () => {
    expect(accepted("name: w\nspecialists: [a]\n", { a: "description: a" }).toolCatalog.declared).toBe(false);
  });
});

describe("other refusals", () => {
  test("a sub-agent named like a mutating tool", () => {
    expect(
      problems(`name: w\nspecialists: [delete_pod]\n${CATALOG}`, {
        delete_pod: "description: d\ncapability: change_executor\ntools: {mcp: [{server: kube, tools: [delete_pod]}]}",
      }),
    ).toEqual([
      `specialist "delete_pod" has the name of a mutating tool: a call to "delete_pod" would be both a delegation and a change. Rename the specialist (name: in <dir>/specialists/delete_pod.tmpl)`,
    ]);
  });

  test("a sub-agent named like a read-only tool, or like no tool, is fine", () => {
    expect(
      accepted(`name: w\nspecialists: [get_pods]\n${CATALOG}`, {
        get_pods: `description: g\n${NO_TOOLS}`,
      }).roster,
    ).toEqual(["get_pods"]);
  });

  test("the name clash sees the live server's tools when the daemon passes them", () => {
    const workload = accepted("name: w\nspecialists: [restart]\ntool_catalog: {mcp: [{server: kube}]}\n", {
      restart: "description: r\ncapability: change_executor",
    });
    expect(compositionProblems(workload)).toEqual([]);
    expect(compositionProblems(workload, { kube: ["restart", "get_pods"] })[0]).toStartWith(
      'specialist "restart" has the name of a mutating tool',
    );
  });

  test("the planner with a change executor needs on_mutation: apply", () => {
    const specialists = { a: "description: a\ncapability: change_executor" };
    expect(problems("name: w\nspecialists: [a]\nplanner: {enabled: true}\n", specialists)).toEqual([
      'planner.enabled with change executor "a" needs hitl.on_mutation: apply (it is require_approval): the planner cannot park on the write gate. Turn the planner off or set on_mutation: apply',
    ]);
    expect(
      accepted("name: w\nspecialists: [a]\nplanner: {enabled: true}\nhitl: {on_mutation: apply}\n", specialists)
        .planner,
    ).toEqual({ enabled: true });
  });

  test("a monitor tool a specialist can reach", () => {
    const bundle = `name: w\nspecialists: [a]\nedge_trigger: {scheduled: {interval: 1m}}
tool_catalog: {tools: [{name: list_alerts, mutating: false}]}
monitor: {collect: [{tool: list_alerts}], ack: {tool: ack_alert}}\n`;
    expect(
      problems(bundle, {
        a: "description: a\ncapability: change_executor\ntools: {mcp: [{server: s, tools: [list_alerts, ack_alert]}]}",
      }),
    ).toEqual([
      'monitor tool "list_alerts" is reachable by specialist "a": monitor tools are the daemon\'s own. Remove it from the specialist\'s tools',
      'monitor tool "ack_alert" is reachable by specialist "a": monitor tools are the daemon\'s own. Remove it from the specialist\'s tools',
    ]);
  });
});

describe("the classification the checks use", () => {
  test("engine control reads; overrides win; invoke_specialist spawns; everything else mutates", () => {
    const overrides = [
      { name: "get_pods", mutating: false },
      { name: "finish_task", mutating: true },
    ];
    expect(mutationClass("finish_task", overrides)).toBe("read_only");
    expect(mutationClass("get_pods", overrides)).toBe("read_only");
    expect(mutationClass("invoke_specialist", [])).toBe("spawns_sub_run");
    expect(mutationClass("run_shape_graph", [])).toBe("spawns_sub_run");
    expect(mutationClass("request_operator_input", [])).toBe("read_only");
    expect(mutationClass("invoke_remote_agent", [])).toBe("mutating");
    expect(mutationClass("anything", [])).toBe("mutating");
  });

  test("reachable tools: SingleTurn none, inherit expands to the catalog's servers when their tools are known", () => {
    const workload = accepted("name: w\nspecialists: [a, b]\ntool_catalog: {mcp: [{server: kube}]}\n", {
      a: "description: a\ncapability: change_executor",
      b: "description: b\nmode: SingleTurn",
    });
    const [a, b] = workload.specialists as [(typeof workload.specialists)[0], (typeof workload.specialists)[0]];
    expect([...reachableTools(a, workload, { kube: ["x", "y"] })]).toEqual(["x", "y"]);
    expect([...reachableTools(b, workload, { kube: ["x"] })]).toEqual([]);
  });
});
