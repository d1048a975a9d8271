/**
 * The valibot schema of `workload.yaml` (docs/svc-workloads.md#workloadyaml-keys): every key of the
 * table with its type and default. Unknown keys are ignored. Cross-field rules (hitl vs
 * hitl_policy, jitter, monitor, preconditions, duplicates) are in bundle-file.ts.
 */
import * as v from "valibot";
import {
  amount,
  anyMapping,
  count,
  duration,
  flag,
  integer,
  listOf,
  mapping,
  nonEmptyText,
  oneOf,
  text,
  stringMapping,
  textList,
} from "./schema-parts.ts";

export const DISPATCH_SETTINGS = ["coordinator", "graph", "fanout", "bounded", "auto"] as const;

const HITL = mapping({
  require_approval: v.optional(flag, false),
  on_mutation: v.optional(oneOf(["require_approval", "apply", "dry_run"]), "require_approval"),
  change_set_ttl: v.optional(duration),
});

const PRECONDITION = mapping({
  read: nonEmptyText,
  args: v.optional(anyMapping, {}),
  args_from: v.optional(stringMapping, {}),
  fields: v.optional(textList, []),
});

const TOOL = mapping({
  name: nonEmptyText,
  mutating: v.optional(flag),
  precondition: v.optional(PRECONDITION),
});

const LISTENER_AUTH = mapping({
  required: v.optional(flag, false),
  scopes: v.optional(textList, []),
});

const SCHEDULED = mapping({
  interval: duration,
  jitter: v.optional(duration),
  prompt: v.optional(text),
});

const MONITOR = mapping({
  collect: v.optional(
    listOf(mapping({ tool: nonEmptyText, args: v.optional(anyMapping, {}), as: v.optional(nonEmptyText) })),
    [],
  ),
  transitions_from: v.optional(nonEmptyText),
  notify: v.optional(mapping({ conversation: nonEmptyText, digest_after: v.optional(duration) })),
  ack: v.optional(mapping({ tool: nonEmptyText, args: v.optional(anyMapping, {}) })),
});

export const BUNDLE_SCHEMA = mapping({
  name: nonEmptyText,
  description: v.optional(text, ""),
  mode: v.optional(oneOf(["single_session", "multi_session"]), "single_session"),
  specialists: v.pipe(listOf(nonEmptyText), v.minLength(1, "expected a non-empty list of specialist names")),
  dispatch: v.optional(oneOf(DISPATCH_SETTINGS)),
  fanout: v.optional(mapping({ max_concurrency: v.optional(integer, 0) }), {}),
  tool_catalog: v.optional(
    mapping({
      mcp: v.optional(listOf(mapping({ server: nonEmptyText })), []),
      tools: v.optional(listOf(TOOL), []),
    }),
  ),
  budget: v.optional(
    mapping({
      max_turns: v.optional(count, 0),
      max_wallclock_seconds: v.optional(count, 0),
      max_cost_usd: v.optional(amount, 0),
    }),
    {},
  ),
  safety: v.optional(mapping({ watchdog: v.optional(oneOf(["warn", "feedback", "enforce"])) }), {}),
  hitl: v.optional(HITL),
  hitl_policy: v.optional(HITL),
  planner: v.optional(mapping({ enabled: v.optional(flag, false) }), {}),
  edge_trigger: v.optional(
    mapping({
      http: v.optional(mapping({ path: v.optional(text), auth: v.optional(text) })),
      scheduled: v.optional(SCHEDULED),
    }),
    {},
  ),
  monitor: v.optional(MONITOR),
  a2a: v.optional(
    mapping({
      expose: v.optional(flag, false),
      skill_name: v.optional(nonEmptyText),
      skill_description: v.optional(text),
      input_schema: v.optional(anyMapping),
      output_schema: v.optional(anyMapping),
      auth: v.optional(LISTENER_AUTH, {}),
    }),
    {},
  ),
  agui: v.optional(
    mapping({
      expose: v.optional(flag, false),
      endpoint_path: v.optional(
        v.pipe(v.string("expected a path starting with /"), v.startsWith("/", "expected a path starting with /")),
      ),
      description: v.optional(text),
      input_schema: v.optional(anyMapping),
      session_model: v.optional(oneOf(["per_thread", "per_run"]), "per_thread"),
      auth: v.optional(LISTENER_AUTH, {}),
    }),
    {},
  ),
});

export type RawBundle = v.InferOutput<typeof BUNDLE_SCHEMA>;
export type RawHitl = v.InferOutput<typeof HITL>;
export type RawMonitor = v.InferOutput<typeof MONITOR>;
export type RawTool = v.InferOutput<typeof TOOL>;
