/**
 * workload.yaml (reference 1.4): every key's default, every value rule and the cross-field rules,
 * each refusal with its exact message (file, dotted field, what was expected, what was given).
 */
import { describe, expect, test } from "bun:test";
import { parseBundleFile } from "../../../../src/svc/workload/bundle-file.ts";

const FILE = "hello/workload.yaml";
const MINIMAL = "name: hello\nspecialists: [helper]\n";

function parsed(yaml: string) {
  const result = parseBundleFile(yaml, FILE);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

function refusal(yaml: string): string {
  const result = parseBundleFile(yaml, FILE);
  if (result.ok) throw new Error("expected a refusal");
  return result.error;
}

describe("defaults", () => {
  test("a bundle with only name and specialists gets every default of the table", () => {
    expect(parsed(MINIMAL)).toEqual({
      name: "hello",
      description: "",
      mode: "single_session",
      roster: ["helper"],
      fanoutMaxConcurrency: 4,
      toolCatalog: { declared: false, mcp: [], tools: [] },
      budget: { maxTurns: 0, maxWallclockSeconds: 0, maxCostUsd: 0 },
      safety: {},
      hitl: { requireApproval: false, onMutation: "require_approval", changeSetTtlMs: 600_000 },
      planner: { enabled: false },
      edgeTrigger: {},
      a2a: { expose: false, skillName: "hello", skillDescription: "", auth: { required: false, scopes: [] } },
      agui: {
        expose: false,
        endpointPath: "/agui/hello",
        sessionModel: "per_thread",
        auth: { required: false, scopes: [] },
      },
    });
  });

  test("unknown keys are ignored and a key with no value counts as absent", () => {
    const bundle = parsed(`${MINIMAL}owner: team-a\nhitl:\nextra: {deep: [1]}\n`);
    expect(bundle.hitl.onMutation).toBe("require_approval");
    expect("owner" in bundle).toBe(false);
  });

  test("a2a skill defaults to the workload's name and description", () => {
    const bundle = parsed(
      `${MINIMAL}description: Says hi.\na2a: {expose: true, auth: {required: true, scopes: [x]}}\n`,
    );
    expect(bundle.a2a).toEqual({
      expose: true,
      skillName: "hello",
      skillDescription: "Says hi.",
      auth: { required: true, scopes: ["x"] },
    });
  });
});

describe("values", () => {
  test("every key of the table is read", () => {
    const bundle = parsed(`
name: full
description: All keys.
mode: multi_session
specialists: [a, b]
dispatch: auto
fanout: {max_concurrency: -1}
tool_catalog:
  mcp: [{server: kube}]
  tools:
    - name: get_deployment
      mutating: false
    - name: scale_deployment
      mutating: true
      precondition:
        read: get_deployment
        args: {namespace: prod}
        args_from: {deployment: deployment}
        fields: [output.replicas]
budget: {max_turns: 7, max_wallclock_seconds: 90, max_cost_usd: 1.5}
safety: {watchdog: enforce}
hitl_policy: {require_approval: true, on_mutation: dry_run, change_set_ttl: 1h30m}
planner: {enabled: true}
edge_trigger:
  http: {path: /inject, auth: bearer}
  scheduled: {interval: 10m, jitter: 500ms, prompt: check}
monitor:
  collect: [{tool: list_pods, args: {ns: prod}, as: pods}, {tool: list_nodes}]
  transitions_from: pods
  notify: {conversation: ops, digest_after: 1h}
  ack: {tool: ack_alert, args: {channel: ops}}
a2a: {expose: true, skill_name: s, skill_description: d, input_schema: {type: object}, output_schema: {type: object}}
agui: {expose: true, endpoint_path: /ui/full, description: UI, input_schema: {type: object}, session_model: per_run, auth: {scopes: [read]}}
`);
    expect(bundle.mode).toBe("multi_session");
    expect(bundle.declaredDispatch).toBe("auto");
    expect(bundle.fanoutMaxConcurrency).toBe("unbounded");
    expect(bundle.toolCatalog).toEqual({
      declared: true,
      mcp: [{ server: "kube" }],
      tools: [
        { name: "get_deployment", mutating: false },
        {
          name: "scale_deployment",
          mutating: true,
          precondition: {
            read: "get_deployment",
            args: { namespace: "prod" },
            argsFrom: { deployment: "deployment" },
            fields: ["output.replicas"],
          },
        },
      ],
    });
    expect(bundle.budget).toEqual({ maxTurns: 7, maxWallclockSeconds: 90, maxCostUsd: 1.5 });
    expect(bundle.safety).toEqual({ watchdog: "enforce" });
    expect(bundle.hitl).toEqual({ requireApproval: true, onMutation: "dry_run", changeSetTtlMs: 5_400_000 });
    expect(bundle.planner).toEqual({ enabled: true });
    expect(bundle.edgeTrigger).toEqual({
      http: { path: "/inject", auth: "bearer" },
      scheduled: { intervalMs: 600_000, jitterMs: 500, prompt: "check" },
    });
    expect(bundle.monitor).toEqual({
      collect: [
        { tool: "list_pods", args: { ns: "prod" }, key: "pods" },
        { tool: "list_nodes", args: {}, key: "list_nodes" },
      ],
      transitionsFrom: "pods",
      notify: { conversation: "ops", digestAfterMs: 3_600_000 },
      ack: { tool: "ack_alert", args: { channel: "ops" } },
    });
    expect(bundle.a2a).toEqual({
      expose: true,
      skillName: "s",
      skillDescription: "d",
      inputSchema: { type: "object" },
      outputSchema: { type: "object" },
      auth: { required: false, scopes: [] },
    });
    expect(bundle.agui).toEqual({
      expose: true,
      endpointPath: "/ui/full",
      description: "UI",
      inputSchema: { type: "object" },
      sessionModel: "per_run",
      auth: { required: false, scopes: ["read"] },
    });
  });

  test("fanout.max_concurrency 0 is the default 4, a positive value is kept", () => {
    expect(parsed(`${MINIMAL}fanout: {max_concurrency: 0}`).fanoutMaxConcurrency).toBe(4);
    expect(parsed(`${MINIMAL}fanout: {max_concurrency: 9}`).fanoutMaxConcurrency).toBe(9);
  });

  test("the scheduled jitter defaults to a tenth of the interval, at most 30s; 0s is honoured", () => {
    expect(parsed(`${MINIMAL}edge_trigger: {scheduled: {interval: 1m}}`).edgeTrigger.scheduled?.jitterMs).toBe(6000);
    expect(parsed(`${MINIMAL}edge_trigger: {scheduled: {interval: 1h}}`).edgeTrigger.scheduled?.jitterMs).toBe(30_000);
    expect(
      parsed(`${MINIMAL}edge_trigger: {scheduled: {interval: 1h, jitter: 0s}}`).edgeTrigger.scheduled?.jitterMs,
    ).toBe(0);
  });
});

describe("refusals name the file, the field and what was expected", () => {
  const cases: [string, string, string][] = [
    [
      "an unknown on_mutation",
      `${MINIMAL}hitl: {on_mutation: "yes"}`,
      `${FILE}: hitl.on_mutation: expected one of require_approval, apply, dry_run, got "yes"`,
    ],
    ["a missing name", "specialists: [a]", `${FILE}: name: required`],
    ["an empty name", `name: ""\nspecialists: [a]`, `${FILE}: name: expected a non-empty string, got ""`],
    ["missing specialists", "name: x", `${FILE}: specialists: required`],
    [
      "an empty specialists list",
      "name: x\nspecialists: []",
      `${FILE}: specialists: expected a non-empty list of specialist names, got a list`,
    ],
    [
      "an empty specialist entry",
      "name: x\nspecialists: [a, '']",
      `${FILE}: specialists[1]: expected a non-empty string, got ""`,
    ],
    [
      "a null specialist entry",
      "name: x\nspecialists: [a, ~]",
      `${FILE}: specialists[1]: expected a non-empty string, got null`,
    ],
    ["a duplicate specialist", "name: x\nspecialists: [a, b, a]", `${FILE}: specialists[2]: duplicate specialist "a"`],
    [
      "an unknown mode",
      `${MINIMAL}mode: batch`,
      `${FILE}: mode: expected one of single_session, multi_session, got "batch"`,
    ],
    [
      "an unknown dispatch",
      `${MINIMAL}dispatch: swarm`,
      `${FILE}: dispatch: expected one of coordinator, graph, fanout, bounded, auto, got "swarm"`,
    ],
    [
      "a fractional max_concurrency",
      `${MINIMAL}fanout: {max_concurrency: 1.5}`,
      `${FILE}: fanout.max_concurrency: expected an integer, got 1.5`,
    ],
    [
      "a tool without a name",
      `${MINIMAL}tool_catalog: {tools: [{mutating: false}]}`,
      `${FILE}: tool_catalog.tools[0].name: required`,
    ],
    [
      "a duplicate tool",
      `${MINIMAL}tool_catalog: {tools: [{name: t}, {name: t}]}`,
      `${FILE}: tool_catalog.tools[1].name: duplicate tool "t"`,
    ],
    [
      "a non-boolean mutating",
      `${MINIMAL}tool_catalog: {tools: [{name: t, mutating: "no"}]}`,
      `${FILE}: tool_catalog.tools[0].mutating: expected true or false, got "no"`,
    ],
    [
      "an mcp entry without a server",
      `${MINIMAL}tool_catalog: {mcp: [{}]}`,
      `${FILE}: tool_catalog.mcp[0].server: required`,
    ],
    [
      "a negative max_turns",
      `${MINIMAL}budget: {max_turns: -1}`,
      `${FILE}: budget.max_turns: expected a non-negative integer, got -1`,
    ],
    [
      "a text max_wallclock_seconds",
      `${MINIMAL}budget: {max_wallclock_seconds: 1m}`,
      `${FILE}: budget.max_wallclock_seconds: expected a non-negative integer, got "1m"`,
    ],
    [
      "a negative max_cost_usd",
      `${MINIMAL}budget: {max_cost_usd: -0.5}`,
      `${FILE}: budget.max_cost_usd: expected a non-negative number, got -0.5`,
    ],
    [
      "an unknown watchdog",
      `${MINIMAL}safety: {watchdog: loud}`,
      `${FILE}: safety.watchdog: expected one of warn, feedback, enforce, got "loud"`,
    ],
    [
      "a non-boolean require_approval",
      `${MINIMAL}hitl: {require_approval: sometimes}`,
      `${FILE}: hitl.require_approval: expected true or false, got "sometimes"`,
    ],
    [
      "a bad change_set_ttl",
      `${MINIMAL}hitl: {change_set_ttl: ten minutes}`,
      `${FILE}: hitl.change_set_ttl: expected a Go duration string such as 10m, 1h30m or 500ms, got "ten minutes"`,
    ],
    [
      "a numeric change_set_ttl",
      `${MINIMAL}hitl: {change_set_ttl: 600}`,
      `${FILE}: hitl.change_set_ttl: expected a Go duration string such as 10m, 1h30m or 500ms, got 600`,
    ],
    [
      "a zero change_set_ttl",
      `${MINIMAL}hitl: {change_set_ttl: 0s}`,
      `${FILE}: hitl.change_set_ttl: expected a duration greater than zero`,
    ],
    [
      "a bad hitl_policy value",
      `${MINIMAL}hitl_policy: {on_mutation: ask}`,
      `${FILE}: hitl_policy.on_mutation: expected one of require_approval, apply, dry_run, got "ask"`,
    ],
    [
      "both hitl and hitl_policy",
      `${MINIMAL}hitl: {on_mutation: apply}\nhitl_policy: {on_mutation: apply}`,
      `${FILE}: hitl_policy: not allowed together with hitl: use one of the two`,
    ],
    [
      "a non-boolean planner",
      `${MINIMAL}planner: {enabled: 1}`,
      `${FILE}: planner.enabled: expected true or false, got 1`,
    ],
    [
      "a schedule without interval",
      `${MINIMAL}edge_trigger: {scheduled: {prompt: p}}`,
      `${FILE}: edge_trigger.scheduled.interval: required`,
    ],
    [
      "an interval under 1s",
      `${MINIMAL}edge_trigger: {scheduled: {interval: 500ms}}`,
      `${FILE}: edge_trigger.scheduled.interval: expected a duration of at least 1s`,
    ],
    [
      "a jitter as long as the interval",
      `${MINIMAL}edge_trigger: {scheduled: {interval: 1m, jitter: 1m}}`,
      `${FILE}: edge_trigger.scheduled.jitter: expected a duration shorter than the interval`,
    ],
    [
      "a negative jitter",
      `${MINIMAL}edge_trigger: {scheduled: {interval: 1m, jitter: -1s}}`,
      `${FILE}: edge_trigger.scheduled.jitter: expected a Go duration string such as 10m, 1h30m or 500ms, got "-1s"`,
    ],
    [
      "an endpoint path without a slash",
      `${MINIMAL}agui: {endpoint_path: agui/x}`,
      `${FILE}: agui.endpoint_path: expected a path starting with /, got "agui/x"`,
    ],
    [
      "an unknown session model",
      `${MINIMAL}agui: {session_model: per_user}`,
      `${FILE}: agui.session_model: expected one of per_thread, per_run, got "per_user"`,
    ],
    [
      "a non-list scope",
      `${MINIMAL}a2a: {auth: {scopes: admin}}`,
      `${FILE}: a2a.auth.scopes: expected a list, got "admin"`,
    ],
    ["a non-mapping block", `${MINIMAL}hitl: [apply]`, `${FILE}: hitl: expected a mapping, got a list`],
    ["a top-level list", "- name: x", `${FILE}: (top level): expected a mapping, got a list`],
  ];
  for (const [what, yaml, message] of cases) test(`${what} is refused`, () => expect(refusal(yaml)).toBe(message));

  test("invalid YAML names the file", () => {
    expect(refusal("name: [unclosed")).toStartWith(`${FILE}: not valid YAML (`);
  });

  test("every problem is reported, one per line", () => {
    expect(refusal("mode: batch\nsafety: {watchdog: loud}").split("\n")).toEqual([
      `${FILE}: name: required`,
      `${FILE}: mode: expected one of single_session, multi_session, got "batch"`,
      `${FILE}: specialists: required`,
      `${FILE}: safety.watchdog: expected one of warn, feedback, enforce, got "loud"`,
    ]);
  });
});

describe("preconditions", () => {
  const tools = (precondition: string, readTool = "{name: get, mutating: false}") =>
    `${MINIMAL}tool_catalog:\n  tools: [${readTool}, {name: scale, precondition: ${precondition}}]`;

  test("the read tool must be classified read-only", () => {
    expect(refusal(tools("{read: get}", "{name: get}"))).toBe(
      `${FILE}: tool_catalog.tools[1].precondition.read: "get" must be classified read-only: list it under tool_catalog.tools with mutating: false`,
    );
    expect(refusal(tools("{read: unlisted}"))).toContain('"unlisted" must be classified read-only');
  });

  test("the read tool must not be the tool itself", () => {
    expect(refusal(tools("{read: scale}"))).toBe(
      `${FILE}: tool_catalog.tools[1].precondition.read: must name a read tool other than "scale" itself`,
    );
  });

  test("read is required inside the block, args_from sides and field paths are non-empty", () => {
    expect(refusal(tools("{fields: [a]}"))).toBe(`${FILE}: tool_catalog.tools[1].precondition.read: required`);
    expect(refusal(tools('{read: get, args_from: {deployment: ""}}'))).toBe(
      `${FILE}: tool_catalog.tools[1].precondition.args_from.deployment: expected a non-empty string, got ""`,
    );
    expect(refusal(tools('{read: get, args_from: {"": deployment}}'))).toBe(
      `${FILE}: tool_catalog.tools[1].precondition.args_from: expected non-empty read argument names, got an empty one`,
    );
    expect(refusal(tools('{read: get, fields: [""]}'))).toBe(
      `${FILE}: tool_catalog.tools[1].precondition.fields[0]: expected a non-empty string, got ""`,
    );
  });

  test("fields default to [] (digest the whole result)", () => {
    expect(parsed(tools("{read: get}")).toolCatalog.tools[1]?.precondition).toEqual({
      read: "get",
      args: {},
      argsFrom: {},
      fields: [],
    });
  });
});

describe("monitor", () => {
  const scheduled = "edge_trigger: {scheduled: {interval: 1m}}\n";

  test("collect and notify need edge_trigger.scheduled", () => {
    expect(refusal(`${MINIMAL}monitor: {collect: [{tool: t}]}`)).toBe(
      `${FILE}: monitor.collect: needs edge_trigger.scheduled (a monitor collects on a schedule)`,
    );
    expect(refusal(`${MINIMAL}monitor: {notify: {conversation: ops}}`)).toBe(
      `${FILE}: monitor.notify: needs edge_trigger.scheduled (a monitor notifies on a schedule)`,
    );
  });

  test("collect keys are unique, as or tool", () => {
    expect(refusal(`${MINIMAL}${scheduled}monitor: {collect: [{tool: a}, {tool: b, as: a}]}`)).toBe(
      `${FILE}: monitor.collect[1]: duplicate collect key "a"`,
    );
  });

  test("transitions_from names a collect key", () => {
    expect(refusal(`${MINIMAL}${scheduled}monitor: {collect: [{tool: a}], transitions_from: b}`)).toBe(
      `${FILE}: monitor.transitions_from: expected one of the collect keys [a], got "b"`,
    );
  });

  test("notify needs a conversation", () => {
    expect(refusal(`${MINIMAL}${scheduled}monitor: {notify: {digest_after: 1h}}`)).toBe(
      `${FILE}: monitor.notify.conversation: required`,
    );
  });

  test("the ack tool's args must not set subject_key or ack_by, and it is not a collect tool", () => {
    expect(refusal(`${MINIMAL}${scheduled}monitor: {ack: {tool: ack, args: {subject_key: k, ack_by: me}}}`)).toBe(
      [
        `${FILE}: monitor.ack.args.subject_key: is set by the daemon and must not be given`,
        `${FILE}: monitor.ack.args.ack_by: is set by the daemon and must not be given`,
      ].join("\n"),
    );
    expect(refusal(`${MINIMAL}${scheduled}monitor: {collect: [{tool: a}], ack: {tool: a}}`)).toBe(
      `${FILE}: monitor.ack.tool: "a" is also a collect tool: use a separate ack tool`,
    );
  });
});
