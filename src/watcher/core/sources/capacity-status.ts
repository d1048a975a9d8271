/**
 * Reading the cluster-autoscaler's status ConfigMap (`kube-system/cluster-autoscaler-status`,
 * key `status`), tolerantly, in both shapes the autoscaler has written (D395): the YAML document
 * of newer releases (`autoscalerStatus`, `clusterWide`, `nodeGroups[]` with `scaleUp.status`,
 * `scaleUp.backoffInfo` and `health.nodeCounts`) and the older plain text (`Cluster-wide:` then
 * `NodeGroups:`, a `Name:` line per group, `ScaleUp:     InProgress (ready=3 cloudProviderTarget=4)`
 * with indented `LastTransitionTime:` lines in Go's time format). Unknown keys and lines are
 * skipped; a group without a name is numbered. Only what the capacity source judges is kept: each
 * node group's scale-up state, since when, its ready and target counts and a backoff error. The
 * YAML parser comes in as an argument (the core imports no package). Pure.
 */

/** One node group as the autoscaler reports it. */
export interface NodeGroupStatus {
  name: string;
  /** The ScaleUp status word as written (`InProgress`, `Backoff`, `NoActivity`, `NeedsScaleUp`, ...); "" when absent. */
  scaleUp: string;
  /** The ScaleUp condition's lastTransitionTime, epoch ms. */
  scaleUpSince?: number;
  ready?: number;
  /** cloudProviderTarget: the size the cloud was asked for. */
  target?: number;
  /** The error behind a backoff (`QUOTA_EXCEEDED: Quota 'CPUS' exceeded ...`), when the status names one. */
  backoffError?: string;
}

export interface AutoscalerStatus {
  format: "yaml" | "text";
  /** The cluster-wide ScaleUp status word ("" when absent). */
  clusterScaleUp: string;
  groups: NodeGroupStatus[];
}

export type YamlParse = (text: string) => unknown;

/** ScaleUp states in which the group wants nodes it does not (yet) have. */
const WANTING = new Set(["InProgress", "Backoff", "Needed", "NeedsScaleUp"]);

export function wantsNodes(group: NodeGroupStatus): boolean {
  return WANTING.has(group.scaleUp);
}

type Json = Record<string, unknown>;

function record(value: unknown): Json {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : {};
}

function str(value: unknown): string {
  return typeof value === "string" ? value : typeof value === "number" ? String(value) : "";
}

function num(value: unknown): number | undefined {
  const parsed = typeof value === "number" ? value : typeof value === "string" ? Number(value) : Number.NaN;
  return Number.isFinite(parsed) ? parsed : undefined;
}

/**
 * A time as the autoscaler writes it: RFC 3339 (`2023-11-24T04:28:19Z`) or Go's `time.String()`
 * (`2023-11-24 04:28:19.546750398 +0000 UTC`); Go's zero time and anything unreadable are undefined.
 */
export function statusTime(value: unknown): number | undefined {
  const text = str(value).trim();
  if (text === "" || text.startsWith("0001-01-01")) return undefined;
  const go = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(\.\d+)?\s*(Z|[+-]\d{2}:?\d{2})?/.exec(text);
  if (!go) return undefined;
  const fraction = go[3] ? go[3].slice(0, 4) : "";
  const zone = !go[4] || go[4] === "Z" ? "Z" : `${go[4].slice(0, 3)}:${go[4].slice(-2)}`;
  const parsed = Date.parse(`${go[1]}T${go[2]}${fraction}${zone}`);
  return Number.isNaN(parsed) ? undefined : parsed;
}

function yamlGroup(raw: unknown, index: number): NodeGroupStatus {
  const group = record(raw);
  const scaleUp = record(group.scaleUp);
  const health = record(group.health);
  const backoff = record(scaleUp.backoffInfo);
  const error = [str(backoff.errorCode), str(backoff.errorMessage)].filter((part) => part !== "").join(": ");
  const since = statusTime(scaleUp.lastTransitionTime);
  const ready = num(record(record(health.nodeCounts).registered).ready);
  const target = num(health.cloudProviderTarget);
  return {
    name: str(group.name) || `nodegroup-${index + 1}`,
    scaleUp: str(scaleUp.status),
    ...(since !== undefined ? { scaleUpSince: since } : {}),
    ...(ready !== undefined ? { ready } : {}),
    ...(target !== undefined ? { target } : {}),
    ...(error ? { backoffError: error } : {}),
  };
}

function parseYamlStatus(text: string, parse: YamlParse): AutoscalerStatus | undefined {
  let document: unknown;
  try {
    document = parse(text);
  } catch {
    return undefined;
  }
  const root = record(document);
  if (!("clusterWide" in root || "nodeGroups" in root || "autoscalerStatus" in root)) return undefined;
  const groups = Array.isArray(root.nodeGroups) ? root.nodeGroups : [];
  return {
    format: "yaml",
    clusterScaleUp: str(record(record(root.clusterWide).scaleUp).status),
    groups: groups.map(yamlGroup),
  };
}

/** `ready=3 cloudProviderTarget=4 (minSize=1, maxSize=5)` as key → value. */
function detailPairs(detail: string): Map<string, string> {
  const pairs = new Map<string, string>();
  for (const match of detail.matchAll(/([A-Za-z]+)=("[^"]*"|[^\s,()]+)/g))
    pairs.set(match[1] ?? "", (match[2] ?? "").replace(/^"|"$/g, ""));
  return pairs;
}

const CONDITION_LINE = /^\s*(Health|ScaleUp|ScaleDown):\s*(\S+)(?:\s*\((.*)\))?\s*$/;

interface TextGroup {
  group: NodeGroupStatus;
  /** The condition the next `LastTransitionTime:` line belongs to. */
  last: string;
}

function applyCondition(target: TextGroup, type: string, status: string, detail: string): void {
  target.last = type;
  if (type !== "Health" && type !== "ScaleUp") return;
  const pairs = detailPairs(detail);
  const ready = num(pairs.get("ready"));
  if (ready !== undefined) target.group.ready = ready;
  const cloud = num(pairs.get("cloudProviderTarget"));
  if (cloud !== undefined) target.group.target = cloud;
  if (type === "Health") return;
  target.group.scaleUp = status;
  const error = [pairs.get("errorCode"), pairs.get("errorMessage")].filter((part) => part).join(": ");
  if (error) target.group.backoffError = error;
}

function parseTextStatus(text: string): AutoscalerStatus {
  const status: AutoscalerStatus = { format: "text", clusterScaleUp: "", groups: [] };
  const cluster: TextGroup = { group: { name: "", scaleUp: "" }, last: "" };
  let section: "none" | "cluster" | "groups" = "none";
  let current: TextGroup | undefined;
  const open = (name: string): TextGroup => {
    const made: TextGroup = { group: { name, scaleUp: "" }, last: "" };
    status.groups.push(made.group);
    return made;
  };
  for (const line of text.split(/\r?\n/)) {
    if (/^\s*Cluster-wide:\s*$/.test(line)) section = "cluster";
    else if (/^\s*NodeGroups:\s*$/.test(line)) section = "groups";
    else if (section === "groups" && line.trim() === "") current = undefined;
    else if (section === "groups" && /^\s*Name:\s*\S/.test(line))
      current = open(line.replace(/^\s*Name:\s*/, "").trim());
    else {
      const condition = CONDITION_LINE.exec(line);
      if (condition && section === "groups") current ??= open(`nodegroup-${status.groups.length + 1}`);
      const target = section === "cluster" ? cluster : section === "groups" ? current : undefined;
      if (!target) continue;
      if (condition) applyCondition(target, condition[1] ?? "", condition[2] ?? "", condition[3] ?? "");
      const transition = /^\s*LastTransitionTime:\s*(.+)$/.exec(line);
      const since = transition && target.last === "ScaleUp" ? statusTime(transition[1]) : undefined;
      if (since !== undefined) target.group.scaleUpSince = since;
    }
  }
  status.clusterScaleUp = cluster.group.scaleUp;
  return status;
}

/**
 * The status text of the ConfigMap in either shape; undefined when it is neither (empty, or
 * nothing the autoscaler writes).
 */
export function parseAutoscalerStatus(text: string, parseYaml: YamlParse): AutoscalerStatus | undefined {
  if (text.trim() === "") return undefined;
  if (/^(time|autoscalerStatus|message|clusterWide|nodeGroups)\s*:/m.test(text)) {
    const yaml = parseYamlStatus(text, parseYaml);
    if (yaml) return yaml;
  }
  const plain = parseTextStatus(text);
  return plain.groups.length > 0 || plain.clusterScaleUp !== "" ? plain : undefined;
}
