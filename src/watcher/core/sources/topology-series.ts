/**
 * The topology-drift source's gauge series (D409), read at scrape time from the last sweep:
 * `watcher_leeway_domain_objects` (a workload's pods per domain and scheduling state; a node
 * group's usable nodes per domain), `watcher_leeway_domain_expected` (the even share per eligible
 * domain), `watcher_leeway_domain_series_withheld{reason}` (series not exported: `key_cap` past
 * `--topology-per-domain-max-keys` axes, `namespace` outside the per-domain namespace lists),
 * `watcher_leeway_drifting_subjects{tier}` and `watcher_leeway_node_groups_untracked`. Which
 * subjects are exported: every one with `--topology-per-domain-series`; else those drifting now or
 * whose drift score (the share of pods to move for the most even spread) is at least `--topology-per-domain-min-drift`
 * (negative: every scored subject). Pure.
 */
import { pinnedValue, type SeriesFamily } from "./leeway-fields.ts";
import { type Judged, scored } from "./topology-intent.ts";
import type { NodeIndex } from "./topology-nodes.ts";
import type { SubjectIndex } from "./topology-subjects.ts";

export interface PerDomainSettings {
  /** Fold running and starting to `active`, pending and unschedulable to `waiting`. */
  collapseStates: boolean;
  excludeNamespaces: readonly string[];
  /** Empty: every namespace. */
  namespaces: readonly string[];
  /** Axes exported per subject; negative: no cap. */
  maxKeys: number;
  /** Negative: every scored subject. */
  minDrift: number;
  /** `--topology-per-domain-series`: every subject, whatever its drift. */
  every: boolean;
}

type Sample = SeriesFamily["samples"][number];

/** What the series read of the detector (its state after the last sweep). */
export interface SeriesSource {
  settings: { perDomain: PerDomainSettings };
  judged: ReadonlyMap<string, readonly Judged[]>;
  subjects: SubjectIndex;
  nodes: NodeIndex;
}

function stateLabel(state: string, collapse: boolean): string {
  if (!collapse) return state;
  return state === "running" || state === "starting" ? "active" : "waiting";
}

function selected(judged: readonly Judged[], settings: PerDomainSettings): boolean {
  if (settings.every) return true;
  if (judged.some((one) => one.drifting)) return true;
  const scoredAxes = judged.filter((one) => scored(one.spread));
  if (scoredAxes.length === 0) return false;
  return settings.minDrift < 0 || scoredAxes.some((one) => one.spread.score >= settings.minDrift);
}

/** One subject's rows on one axis: objects per domain and state, and the expected share. */
function axisRows(detector: SeriesSource, key: string, judged: Judged): { objects: Sample[]; expected: Sample[] } {
  const { collapseStates } = detector.settings.perDomain;
  const axis = judged.intent.key;
  const subject = detector.subjects.subjects.get(key);
  const base = subject
    ? { namespace: subject.workload.namespace, subject_kind: subject.workload.kind, subject: subject.workload.name }
    : { namespace: "", subject_kind: "NodeGroup", subject: key.slice("nodegroup:".length) };
  const counts = new Map<string, number>();
  const add = (domain: string, state: string) => {
    const id = `${domain}\u0000${state}`;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  };
  if (subject) {
    for (const domain of judged.spread.counts.keys())
      counts.set(`${domain}\u0000${stateLabel("running", collapseStates)}`, 0);
    for (const uid of subject.pods) {
      const pod = detector.subjects.pods.get(uid);
      if (!pod) continue;
      const placed = pod.node ? detector.nodes.nodes.get(pod.node)?.labels[axis] : undefined;
      const domain = placed ?? pinnedValue(pod.spec, axis) ?? "unscheduled";
      add(domain, stateLabel(pod.state, collapseStates));
    }
  } else for (const [domain, count] of judged.spread.counts) counts.set(`${domain}\u0000usable`, count);
  const objects = [...counts].map(([id, value]) => {
    const [domain = "", state = ""] = id.split("\u0000");
    return { labels: { ...base, key: axis, domain, state }, value };
  });
  const eligible = judged.spread.counts.size;
  const expected = [...judged.spread.counts.keys()].map((domain) => ({
    labels: { ...base, key: axis, domain },
    value: eligible > 0 ? judged.spread.total / eligible : 0,
  }));
  return { objects, expected };
}

export function topologySeries(detector: SeriesSource): SeriesFamily[] {
  const settings = detector.settings.perDomain;
  const objects: Sample[] = [];
  const expected: Sample[] = [];
  const withheld = { key_cap: 0, namespace: 0 };
  const drifting = { A: 0, B: 0, C: 0 };
  for (const [key, judged] of detector.judged) {
    const worst = judged.find((one) => one.drifting);
    if (worst) drifting[worst.intent.tier]++;
    if (!selected(judged, settings)) continue;
    const namespace = detector.subjects.subjects.get(key)?.workload.namespace;
    const outside =
      namespace !== undefined &&
      (settings.excludeNamespaces.includes(namespace) ||
        (settings.namespaces.length > 0 && !settings.namespaces.includes(namespace)));
    const axes = judged.filter((one) => one.spread.counts.size > 0);
    axes.forEach((one, index) => {
      const rows = axisRows(detector, key, one);
      const count = rows.objects.length + rows.expected.length;
      if (outside) withheld.namespace += count;
      else if (settings.maxKeys >= 0 && index >= settings.maxKeys) withheld.key_cap += count;
      else {
        objects.push(...rows.objects);
        expected.push(...rows.expected);
      }
    });
  }
  return [
    {
      name: "leeway_domain_objects",
      help: "a subject's pods (a node group's usable nodes) per topology domain and state",
      samples: objects,
    },
    { name: "leeway_domain_expected", help: "a subject's even share per eligible topology domain", samples: expected },
    {
      name: "leeway_domain_series_withheld",
      help: "per-domain series not exported, by reason (key_cap, namespace)",
      samples: Object.entries(withheld).map(([reason, value]) => ({ labels: { reason }, value })),
    },
    {
      name: "leeway_drifting_subjects",
      help: "subjects drifting from their spread intent now, by tier",
      samples: Object.entries(drifting).map(([tier, value]) => ({ labels: { tier }, value })),
    },
    {
      name: "leeway_node_groups_untracked",
      help: "node groups past --topology-max-node-groups, not judged",
      samples: [{ labels: {}, value: detector.nodes.untrackedGroups }],
    },
  ];
}
