/**
 * The node side of the topology-drift source: every node's labels and usability (D407), the
 * domains of each axis, `leeway.domain_unavailable` (D407) and the node groups (D410). A domain
 * on an axis of `--topology-domain-unavailable-keys` whose nodes are all unusable for
 * `--topology-dwell` raises one critical finding; a usable node back clears it. A domain whose
 * last node was deleted while unusable (a zone that died and was reaped) stays unavailable for a
 * day, then is forgotten; one whose last node was deleted while usable shrank on purpose (a
 * scale-down) and is forgotten at once. Pure.
 */
import type { Signal } from "../signal.ts";
import type { KubeObject, ObjectChange } from "../source-spec.ts";
import { goDuration } from "../go-time.ts";
import { labels, nodeUsable } from "./leeway-fields.ts";
import { meta, sourceSignal } from "./source-fields.ts";

export interface NodeInfo {
  labels: Record<string, string>;
  usable: boolean;
}

interface Domain {
  key: string;
  value: string;
  nodes: Set<string>;
  /** Since when no node of the domain is usable (undefined while one is). */
  unusableSince?: number | undefined;
  /** When its last node went; the domain is forgotten a day later. */
  emptySince?: number | undefined;
  fired: boolean;
}

export interface NodeGroup {
  /** `key=value` of the first node-group label the nodes carry. */
  name: string;
  /** Nodes per domain of the first axis: usable and all. */
  domains: Map<string, { usable: number; all: number }>;
}

export interface NodeIndexSettings {
  keys: readonly string[];
  unavailableKeys: readonly string[];
  dwellMs: number;
  /** How long a domain whose nodes died and were deleted is remembered. */
  domainMemoryMs: number;
  nodeGroupKeys: readonly string[];
  /** Node groups tracked; past it the rest are counted as untracked; negative: none. */
  maxNodeGroups: number;
}

export class NodeIndex {
  readonly nodes = new Map<string, NodeInfo>();
  readonly #domains = new Map<string, Domain>();
  readonly #groups: string[] = [];
  #untrackedGroups = 0;

  constructor(private readonly settings: NodeIndexSettings) {}

  get size(): { nodes: number; domains: number; groups: number } {
    return { nodes: this.nodes.size, domains: this.#domains.size, groups: this.#groups.length };
  }

  /** Node groups seen but not tracked because of `--topology-max-node-groups`. */
  get untrackedGroups(): number {
    return this.#untrackedGroups;
  }

  observe(change: ObjectChange, object: KubeObject, now: number): void {
    const { name } = meta(object);
    const before = this.nodes.get(name);
    if (change === "delete") {
      this.nodes.delete(name);
      for (const domain of this.#domainsOf(before)) {
        domain.nodes.delete(name);
        if (domain.nodes.size > 0) this.#judge(domain, now);
        // Its last node left: a usable one leaving is a shrink; an unusable one, a domain that died.
        else if (before?.usable) this.#domains.delete(`${domain.key}=${domain.value}`);
        else domain.emptySince = now;
      }
      return;
    }
    const info: NodeInfo = { labels: labels(object), usable: nodeUsable(object) };
    this.nodes.set(name, info);
    for (const domain of this.#domainsOf(before))
      if (!this.#domainsOf(info).includes(domain)) domain.nodes.delete(name);
    for (const key of this.settings.unavailableKeys) {
      const value = info.labels[key];
      if (value === undefined) continue;
      const id = `${key}=${value}`;
      const domain = this.#domains.get(id) ?? { key, value, nodes: new Set<string>(), fired: false };
      this.#domains.set(id, domain);
      domain.nodes.add(name);
      domain.emptySince = undefined;
    }
    for (const domain of this.#domainsOf(before)) this.#judge(domain, now);
    for (const domain of this.#domainsOf(info)) this.#judge(domain, now);
  }

  /** Domains unavailable for the dwell, each once; forgets domains empty for a day. */
  tick(now: number): Signal[] {
    const signals: Signal[] = [];
    for (const [id, domain] of this.#domains) {
      if (domain.emptySince !== undefined && now - domain.emptySince >= this.settings.domainMemoryMs) {
        this.#domains.delete(id);
        continue;
      }
      if (domain.fired || domain.unusableSince === undefined) continue;
      if (now - domain.unusableSince < this.settings.dwellMs) continue;
      domain.fired = true;
      signals.push(this.#signal(domain, now));
    }
    return signals;
  }

  /** The domains of an axis with a usable node matching `accepts` (a workload's node selector). */
  eligibleDomains(key: string, accepts: (nodeLabels: Record<string, string>) => boolean): Set<string> {
    const found = new Set<string>();
    for (const node of this.nodes.values()) {
      const value = node.labels[key];
      if (value !== undefined && node.usable && accepts(node.labels)) found.add(value);
    }
    return found;
  }

  /** The node groups (D410) tracked now, by their first-axis domains, at most `maxNodeGroups`. */
  nodeGroups(): NodeGroup[] {
    const { maxNodeGroups, nodeGroupKeys, keys } = this.settings;
    const axis = keys[0];
    if (maxNodeGroups < 0 || axis === undefined) return [];
    const groups = new Map<string, NodeGroup>();
    for (const node of this.nodes.values()) {
      const key = nodeGroupKeys.find((candidate) => node.labels[candidate] !== undefined);
      const domain = node.labels[axis];
      if (key === undefined || domain === undefined) continue;
      const name = `${key}=${node.labels[key]}`;
      const group = groups.get(name) ?? { name, domains: new Map() };
      groups.set(name, group);
      const counts = group.domains.get(domain) ?? { usable: 0, all: 0 };
      counts.all++;
      if (node.usable) counts.usable++;
      group.domains.set(domain, counts);
    }
    // Tracked in order of first sight; a group that lost its nodes gives its place up.
    for (let index = this.#groups.length - 1; index >= 0; index--)
      if (!groups.has(this.#groups[index] ?? "")) this.#groups.splice(index, 1);
    for (const name of groups.keys())
      if (!this.#groups.includes(name) && this.#groups.length < maxNodeGroups) this.#groups.push(name);
    this.#untrackedGroups = groups.size - this.#groups.length;
    return this.#groups.flatMap((name) => {
      const group = groups.get(name);
      return group ? [group] : [];
    });
  }

  #domainsOf(info: NodeInfo | undefined): Domain[] {
    if (!info) return [];
    return this.settings.unavailableKeys.flatMap((key) => {
      const value = info.labels[key];
      const domain = value === undefined ? undefined : this.#domains.get(`${key}=${value}`);
      return domain ? [domain] : [];
    });
  }

  #judge(domain: Domain, now: number): void {
    const usable = [...domain.nodes].some((name) => this.nodes.get(name)?.usable);
    if (usable) {
      domain.unusableSince = undefined;
      domain.fired = false;
    } else domain.unusableSince ??= now;
  }

  #signal(domain: Domain, now: number): Signal {
    const since = domain.unusableSince ?? now;
    const nodes = domain.nodes.size;
    const what =
      nodes === 0
        ? "its last node was deleted while not usable"
        : `none of its ${nodes} node(s) is Ready and schedulable`;
    return sourceSignal({
      kind: "leeway.domain_unavailable",
      reason: "domain_unavailable",
      object: { namespace: "", name: domain.value, uid: `domain:${domain.key}=${domain.value}` },
      kindOfObject: "TopologyDomain",
      severity: "critical",
      now,
      message: `domain ${domain.key}=${domain.value} has had no usable node for ${goDuration(now - since)}: ${what}`,
    });
  }
}
