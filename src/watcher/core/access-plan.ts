/**
 * Startup access planning (docs/watcher-pipeline.md#access-plan, docs/watcher.md#startup-refusals):
 * which grants each source and storm correlation need, and, given the answers of the access
 * reviews, which sources run, whether storms are on, and which refusals stop the watcher. Under
 * `auto` a source with a missing grant is skipped with one loud line, except `cluster-events`
 * (misdeployed: fatal); an explicit list makes a named source's missing grant fatal (and one this
 * build lacks); under `auto` the sources this build lacks are named together on one line.
 * `--storm=on` with a missing grant is fatal. Recovery tracking (`--recovery-stable-for` above 0)
 * needs list and watch on pods: without them it is disabled with one line naming the missing grant,
 * and nothing watches pods for it. Every watch the runner starts is one this plan reviewed;
 * `optionalAccess` is the list the access re-check tracks beside the sources' (only grants held at
 * startup, never one that was missing). A source whose spec names an API (`discovery`) runs only
 * when the cluster serves it: under `auto` a missing API is one line, in an explicit list it is
 * fatal; a poll gated on an API the cluster lacks is left out, said on the source's line (D386).
 * A denied optional grant of a source (a watch's or poll's `optional`) leaves that part out and
 * says so on the source's line, `enabled, degraded (...)`, never fatal (D392).
 * Under `auto` the source lines sit between an opening and a closing summary line. The reviews and
 * the discovery requests themselves are the caller's I/O. Pure.
 */
import { SOURCE_SPECS, sourceSpec } from "./source-catalog.ts";

import type { AccessCheck } from "./access-check.ts";
import type { SourcePoll } from "./source-spec.ts";

export type { AccessCheck } from "./access-check.ts";

export type AccessAnswer = { allowed: true } | { allowed: false; reason?: string } | { error: string };

export function describeCheck(check: AccessCheck): string {
  const resource = `${check.resource}${check.subresource ? `/${check.subresource}` : ""}${check.group ? `.${check.group}` : ""}`;
  const name = check.name ? ` ${check.name}` : "";
  return `${check.verb} ${resource}${name} ${check.namespace ? `in namespace ${check.namespace}` : "cluster-wide"}`;
}

export function checkKey(check: AccessCheck): string {
  // A named check adds its name; the keys of unnamed ones stay as they were (they name sentinel uids).
  const name = check.name ? `|${check.name}` : "";
  return `${check.verb}|${check.group}|${check.resource}|${check.subresource ?? ""}|${check.namespace ?? ""}${name}`;
}

const listWatch = (group: string, resource: string): AccessCheck[] => [
  { verb: "list", group, resource },
  { verb: "watch", group, resource },
];

/** The sources this build can run, with the grants each requires (those of the contract from their specs). */
export const SOURCE_ACCESS: Readonly<Record<string, readonly AccessCheck[]>> = {
  "cluster-events": listWatch("", "events"),
  ...Object.fromEntries(SOURCE_SPECS.map((spec) => [spec.name, spec.required])),
};

/** Grants storm correlation needs: the topology graph of pods, nodes and replicasets. */
export const STORM_ACCESS: readonly AccessCheck[] = [
  ...listWatch("", "pods"),
  ...listWatch("", "nodes"),
  ...listWatch("apps", "replicasets"),
];

/** Grants recovery tracking needs: pod readiness, from a pods watch (nothing else). */
export const RECOVERY_ACCESS: readonly AccessCheck[] = listWatch("", "pods");

/** What discovery says a group/version serves (its resource names; none when the group is absent). */
export type DiscoveryAnswer = { resources: readonly string[] } | { error: string };

export interface AccessPlanInput {
  sources: { auto: boolean; names: readonly string[] };
  /** Grants and polls of sources that depend on their settings (a namespace scope), replacing the SourceSpec's. */
  scoped?: Readonly<Record<string, { required: readonly AccessCheck[]; polls: readonly SourcePoll[] }>>;
  /** Discovery answers for every group/version `discoveryNeeds` named. */
  discovery?: (groupVersion: string) => DiscoveryAnswer;
  storm: "auto" | "on" | "off";
  /** Recovery tracking is wanted (`--recovery-stable-for` above 0). */
  recovery?: boolean;
}

export interface AccessPlan {
  sources: string[];
  storm: boolean;
  /** Recovery tracking runs (wanted and its grants held). */
  recovery: boolean;
  /** One line per decision, for the startup log. */
  notes: string[];
  /** Polls and watches left out per source: the API they read is not served (D386), an optional grant denied (D392). */
  without: Record<string, string[]>;
  /** Set when the watcher must not start. */
  refusal?: string;
  /** The refusal comes from a review that could not be answered (the cluster was not reached), not from a denial. */
  unreachable?: boolean;
}

function unique(checks: readonly AccessCheck[]): AccessCheck[] {
  const seen = new Set<string>();
  return checks.filter((check) => !seen.has(checkKey(check)) && seen.add(checkKey(check)));
}

/** The grants a source requires under this input (its scoped grants, else its SourceSpec's). */
export function sourceAccess(input: Pick<AccessPlanInput, "scoped">, name: string): readonly AccessCheck[] {
  return input.scoped?.[name]?.required ?? SOURCE_ACCESS[name] ?? [];
}

function sourcePolls(input: Pick<AccessPlanInput, "scoped">, name: string): readonly SourcePoll[] {
  return input.scoped?.[name]?.polls ?? sourceSpec(name)?.polls ?? [];
}

/** A source's optional dimensions: each watch and poll with optional grants, and what is lost without them (D392). */
function optionalParts(
  input: Pick<AccessPlanInput, "scoped">,
  name: string,
): { name: string; checks: readonly AccessCheck[]; loses: string }[] {
  const parts = [...(sourceSpec(name)?.watches ?? []), ...sourcePolls(input, name)];
  return parts.flatMap((part) =>
    part.optional && part.optional.length > 0
      ? [{ name: part.name, checks: part.optional, loses: part.loses ?? `${part.name} not read` }]
      : [],
  );
}

/** Every group/version the plan needs discovery of: sources' required APIs and gated polls (D386). */
export function discoveryNeeds(input: Pick<AccessPlanInput, "sources">): string[] {
  const needs = input.sources.names.flatMap((name) => {
    const spec = sourceSpec(name);
    return [
      ...(spec?.discovery ? [spec.discovery.groupVersion] : []),
      ...(spec?.polls ?? []).flatMap((poll) => (poll.discovery ? [poll.discovery.groupVersion] : [])),
    ];
  });
  return [...new Set(needs)];
}

/** Every access review the plan needs answered. */
export function accessChecksFor(input: AccessPlanInput): AccessCheck[] {
  const checks = input.sources.names.flatMap((name) => [
    ...sourceAccess(input, name),
    ...optionalParts(input, name).flatMap((part) => part.checks),
  ]);
  if (input.storm !== "off") checks.push(...STORM_ACCESS);
  if (input.recovery) checks.push(...RECOVERY_ACCESS);
  return unique(checks);
}

/**
 * The watches a plan starts besides its sources': `pods` (storms or recovery), `replicasets`
 * (storms only), `nodes` (recovery, for Node clearance, D377) when a part that runs already holds
 * list and watch on nodes: storms or the object-state source. No new grant is ever asked for it.
 * Storms watch nodes too: the cluster fallback's threshold is a fifth of the nodes (D430).
 */
export function optionalWatches(plan: Pick<AccessPlan, "storm" | "recovery"> & { sources?: readonly string[] }): {
  pods: boolean;
  replicaSets: boolean;
  nodes: boolean;
} {
  const nodesHeld = plan.storm || (plan.sources ?? []).includes("object-state");
  return {
    pods: plan.storm || plan.recovery,
    replicaSets: plan.storm,
    nodes: plan.storm || (plan.recovery && nodesHeld),
  };
}

/**
 * The optional grants the access re-check tracks: those of storms and recovery when they run, and
 * those of the enabled sources' optional parts that were granted (not left out) at startup (D392).
 */
export function optionalAccess(
  plan: Pick<AccessPlan, "storm" | "recovery"> & Partial<Pick<AccessPlan, "sources" | "without">>,
): AccessCheck[] {
  const sources = (plan.sources ?? []).flatMap((name) =>
    optionalParts({}, name)
      .filter((part) => !(plan.without?.[name] ?? []).includes(part.name))
      .flatMap((part) => part.checks),
  );
  return unique([...(plan.storm ? STORM_ACCESS : []), ...(plan.recovery ? RECOVERY_ACCESS : []), ...sources]);
}

function firstDenied(
  checks: readonly AccessCheck[],
  answer: (check: AccessCheck) => AccessAnswer,
): { check: AccessCheck; answer: AccessAnswer } | undefined {
  for (const check of checks) {
    const found = answer(check);
    if (!("allowed" in found) || !found.allowed) return { check, answer: found };
  }
  return undefined;
}

const AUTO_CLOSING_NOTE =
  "(quota, notifications and token-burn stay explicit-only: a cloud quota provider, --notifications-subscription, and the agent daemon's cost stack)";

type SourceVerdict = { enabled: true; note: string; without: string[] } | { enabled: false; note: string };

/** Whether a served API decides one source: `undefined` when it needs none or it is served (D386). */
function apiVerdict(
  name: string,
  input: AccessPlanInput,
): { refusal: string; unreachable?: boolean } | { note: string } | undefined {
  const need = sourceSpec(name)?.discovery;
  if (!need) return undefined;
  const found = input.discovery?.(need.groupVersion) ?? { error: "not discovered" };
  if ("error" in found)
    return {
      refusal: `discovery of ${need.groupVersion} for source "${name}" failed: ${found.error}`,
      unreachable: true,
    };
  if (need.resources.some((resource) => found.resources.includes(resource))) return undefined;
  if (!input.sources.auto)
    return {
      refusal: `source "${name}" needs the ${need.groupVersion} API (${need.resources.join(" or ")}), which this cluster does not serve — ${need.missing}, or remove it from --sources`,
    };
  return { note: `source ${name}: disabled (${need.groupVersion} unavailable — ${need.missing})` };
}

/** The polls of a source left out because the API they read is not served. */
function unservedPolls(name: string, input: AccessPlanInput): string[] | { error: string } {
  const without: string[] = [];
  for (const poll of sourcePolls(input, name)) {
    if (!poll.discovery) continue;
    const found = input.discovery?.(poll.discovery.groupVersion) ?? { error: "not discovered" };
    if ("error" in found) return { error: `discovery of ${poll.discovery.groupVersion} failed: ${found.error}` };
    if (!found.resources.includes(poll.discovery.resource)) without.push(poll.name);
  }
  return without;
}

/** One source's decision, or the refusal that stops the watcher. */
function decideSource(
  name: string,
  input: AccessPlanInput,
  answer: (check: AccessCheck) => AccessAnswer,
): SourceVerdict | { refusal: string; unreachable?: boolean } {
  const api = apiVerdict(name, input);
  if (api && "refusal" in api) return api;
  if (api) return { enabled: false, note: api.note };
  const denied = firstDenied(sourceAccess(input, name), answer);
  if (denied && "error" in denied.answer)
    return { refusal: `access review for source "${name}" failed: ${denied.answer.error}`, unreachable: true };
  if (denied) {
    const why = "reason" in denied.answer && denied.answer.reason ? ` (${denied.answer.reason})` : "";
    const hint = sourceSpec(name)?.grantHint;
    const grant = hint ? `grant it (${hint})` : "grant it";
    const message = `source "${name}" requires permission to "${describeCheck(denied.check)}" and this service account does not have it${why}; ${grant} or disable the source — refusing to run a silently empty watch`;
    if (!input.sources.auto || name === "cluster-events")
      return {
        refusal: input.sources.auto
          ? `${message} (cluster-events is always on under --sources=auto: a watcher that cannot watch events is misdeployed)`
          : message,
      };
    return {
      enabled: false,
      note: `source ${name}: disabled (missing "${describeCheck(denied.check)}" — ${grant}, or name it in --sources to make this fatal)`,
    };
  }
  const without = unservedPolls(name, input);
  if ("error" in without) return { refusal: `source "${name}": ${without.error}`, unreachable: true };
  const gated = sourcePolls(input, name).filter((poll) => without.includes(poll.name));
  const apis = [...new Set(gated.map((poll) => `${poll.discovery?.groupVersion} ${poll.discovery?.resource}`))];
  const degraded = deniedOptional(name, input, answer, without);
  if ("refusal" in degraded) return degraded;
  const always = input.sources.auto && name === "cluster-events";
  const unserved = apis.length > 0 ? [`${apis.join(", ")} not served: not read`] : [];
  const detail = always
    ? " (always on — a watcher that cannot watch events is misdeployed)"
    : degraded.length > 0
      ? `, degraded (${[...degraded, ...unserved].join("; ")})`
      : unserved.length > 0
        ? ` (${unserved[0]})`
        : "";
  return { enabled: true, note: `source ${name}: enabled${detail}`, without };
}

/**
 * D392: each optional dimension whose grant is denied is left out (its name joins `without`) and
 * said as `<grant> denied — <what is lost>`; never fatal, under auto and an explicit list alike.
 * A review that could not be answered is fatal, as for a required grant.
 */
function deniedOptional(
  name: string,
  input: AccessPlanInput,
  answer: (check: AccessCheck) => AccessAnswer,
  without: string[],
): string[] | { refusal: string; unreachable: true } {
  const lines: string[] = [];
  for (const part of optionalParts(input, name)) {
    if (without.includes(part.name)) continue;
    const denied = firstDenied(part.checks, answer);
    if (!denied) continue;
    if ("error" in denied.answer)
      return { refusal: `access review for source "${name}" failed: ${denied.answer.error}`, unreachable: true };
    without.push(part.name);
    const why = "reason" in denied.answer && denied.answer.reason ? `: ${denied.answer.reason}` : "";
    lines.push(`${describeCheck(denied.check)} denied${why} — ${part.loses}`);
  }
  return lines;
}

/** The opening line of the `auto` summary: what is probed, and the APIs some sources need. */
function autoOpening(names: readonly string[]): string {
  const apis = names.flatMap((name) => {
    const need = sourceSpec(name)?.discovery;
    return need ? [`${need.groupVersion} for ${name}`] : [];
  });
  return `sources: auto — probing the portable set (RBAC per source${apis.length > 0 ? `; discovery of ${apis.join(", ")}` : ""}); misses are skipped loudly — name sources in --sources to make a miss fatal`;
}

export function planAccess(input: AccessPlanInput, answer: (check: AccessCheck) => AccessAnswer): AccessPlan {
  const plan: AccessPlan = { sources: [], storm: false, recovery: false, notes: [], without: {} };
  const fail = (refusal: string): AccessPlan => ({ ...plan, refusal });
  const unreachable = (refusal: string): AccessPlan => ({ ...plan, refusal, unreachable: true });
  const unbuilt = input.sources.names.filter((name) => !SOURCE_ACCESS[name]);
  const firstUnbuilt = unbuilt[0];
  if (firstUnbuilt !== undefined && !input.sources.auto)
    return fail(`source "${firstUnbuilt}" is not available in this build; remove it from --sources`);
  if (input.sources.auto) plan.notes.push(autoOpening(input.sources.names));
  // Under auto, the sources this build lacks are one line, not one each (D338).
  if (unbuilt.length > 0) plan.notes.push(`sources not available in this build, off: ${unbuilt.join(", ")}`);
  for (const name of input.sources.names) {
    if (!SOURCE_ACCESS[name]) continue;
    const verdict = decideSource(name, input, answer);
    if ("refusal" in verdict) return verdict.unreachable ? unreachable(verdict.refusal) : fail(verdict.refusal);
    plan.notes.push(verdict.note);
    if (!verdict.enabled) continue;
    plan.sources.push(name);
    if (verdict.without.length > 0) plan.without[name] = verdict.without;
  }
  if (input.sources.auto) plan.notes.push(`sources: auto resolved → ${plan.sources.join(",")} ${AUTO_CLOSING_NOTE}`);
  if (input.storm !== "off") {
    const denied = firstDenied(STORM_ACCESS, answer);
    if (denied && "error" in denied.answer)
      return unreachable(`access review for storm correlation failed: ${denied.answer.error}`);
    if (denied && input.storm === "on")
      return fail(
        `--storm=on requires permission to "${describeCheck(denied.check)}" and this service account does not have it; grant it or use --storm=auto or off`,
      );
    plan.storm = !denied;
    plan.notes.push(denied ? `storm: off (missing "${describeCheck(denied.check)}")` : "storm: on");
  } else plan.notes.push("storm: off");
  if (input.recovery) {
    const denied = firstDenied(RECOVERY_ACCESS, answer);
    if (denied && "error" in denied.answer)
      return unreachable(`access review for recovery tracking failed: ${denied.answer.error}`);
    plan.recovery = !denied;
    const why = denied && "reason" in denied.answer && denied.answer.reason ? ` (${denied.answer.reason})` : "";
    plan.notes.push(
      denied
        ? `recovery: DISABLED (missing "${describeCheck(denied.check)}"${why} — resolved and resolved.reverted will not be sent; grant list and watch on pods to turn it on)`
        : "recovery: on",
    );
  }
  return plan;
}
