/**
 * Field and label selectors as the apiserver parses them. Field selectors support `=`, `==` and
 * `!=` on the fields each resource registers (events: `involvedObject.*`, `reason`, `type`,
 * `source`, `reportingComponent`; every resource: `metadata.name`, `metadata.namespace`); an
 * unknown field is a 400, as in a real cluster. Label selectors support equality, `!=`, `in`,
 * `notin`, existence and `!key`. Parsing returns a result instead of throwing.
 */

type Fields = (object: KubeObject) => Record<string, string>;

export type KubeObject = Record<string, unknown> & { metadata?: Record<string, unknown> };

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

function text(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "boolean" || typeof value === "number"
    ? String(value)
    : typeof value === "string"
      ? value
      : "";
}

function at(object: unknown, path: string): unknown {
  let current: unknown = object;
  for (const key of path.split(".")) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function pick(object: KubeObject, paths: Record<string, string>): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [field, path] of Object.entries(paths)) result[field] = text(at(object, path));
  return result;
}

const EVENT_FIELDS: Record<string, string> = {
  "involvedObject.kind": "involvedObject.kind",
  "involvedObject.namespace": "involvedObject.namespace",
  "involvedObject.name": "involvedObject.name",
  "involvedObject.uid": "involvedObject.uid",
  "involvedObject.apiVersion": "involvedObject.apiVersion",
  "involvedObject.resourceVersion": "involvedObject.resourceVersion",
  "involvedObject.fieldPath": "involvedObject.fieldPath",
  reason: "reason",
  reportingComponent: "reportingComponent",
  source: "source.component",
  type: "type",
};

/** Field selector names per storage key, beyond `metadata.name` and `metadata.namespace`. */
const FIELDS_BY_STORAGE: Record<string, Record<string, string>> = {
  events: EVENT_FIELDS,
  pods: {
    "spec.nodeName": "spec.nodeName",
    "spec.restartPolicy": "spec.restartPolicy",
    "spec.schedulerName": "spec.schedulerName",
    "spec.serviceAccountName": "spec.serviceAccountName",
    "spec.hostNetwork": "spec.hostNetwork",
    "status.phase": "status.phase",
    "status.podIP": "status.podIP",
    "status.nominatedNodeName": "status.nominatedNodeName",
  },
  nodes: { "spec.unschedulable": "spec.unschedulable" },
  namespaces: { "status.phase": "status.phase" },
  secrets: { type: "type" },
  "replicasets.apps": { "status.replicas": "status.replicas" },
};

/** events.k8s.io/v1 names for the same event fields (the apiserver's field label conversion). */
const EVENTS_V1_ALIASES: Record<string, string> = {
  "regarding.kind": "involvedObject.kind",
  "regarding.namespace": "involvedObject.namespace",
  "regarding.name": "involvedObject.name",
  "regarding.uid": "involvedObject.uid",
  "regarding.apiVersion": "involvedObject.apiVersion",
  "regarding.resourceVersion": "involvedObject.resourceVersion",
  "regarding.fieldPath": "involvedObject.fieldPath",
  reportingController: "reportingComponent",
  "deprecatedSource.component": "source",
};

function fieldsFor(storage: string): Fields {
  const paths = {
    "metadata.name": "metadata.name",
    "metadata.namespace": "metadata.namespace",
    ...(FIELDS_BY_STORAGE[storage] ?? {}),
  };
  return (object) => pick(object, paths);
}

interface FieldRequirement {
  field: string;
  negate: boolean;
  value: string;
}

export type Matcher = (object: KubeObject) => boolean;

const MATCH_ALL: Matcher = () => true;

/**
 * Parse a field selector for a storage key. `eventsV1` accepts the events.k8s.io field names.
 * Stored objects are always in their canonical (core) form.
 */
export function parseFieldSelector(selector: string | null, storage: string, eventsV1 = false): Parsed<Matcher> {
  if (!selector) return { ok: true, value: MATCH_ALL };
  const fields = fieldsFor(storage);
  const known = new Set(Object.keys(fields({})));
  const requirements: FieldRequirement[] = [];
  for (const term of selector.split(",")) {
    if (term.trim() === "") continue;
    const match = /^\s*([^!=\s]+)\s*(!=|==|=)\s*(.*?)\s*$/.exec(term);
    if (!match || match[1] === undefined || match[3] === undefined)
      return { ok: false, error: `invalid selector: '${selector}'; can't understand '${term}'` };
    const field = eventsV1 ? (EVENTS_V1_ALIASES[match[1]] ?? match[1]) : match[1];
    if (!known.has(field)) return { ok: false, error: `field label not supported: ${match[1]}` };
    requirements.push({ field, negate: match[2] === "!=", value: match[3] });
  }
  return {
    ok: true,
    value: (object) => {
      const values = fields(object);
      return requirements.every(
        (requirement) => (values[requirement.field] === requirement.value) !== requirement.negate,
      );
    },
  };
}

type LabelRequirement =
  | { op: "exists" | "absent"; key: string }
  | { op: "in" | "notin"; key: string; values: string[] };

function splitTopLevel(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < selector.length; index++) {
    const char = selector[index];
    if (char === "(") depth++;
    else if (char === ")") depth--;
    else if (char === "," && depth === 0) {
      parts.push(selector.slice(start, index));
      start = index + 1;
    }
  }
  parts.push(selector.slice(start));
  return parts.map((part) => part.trim()).filter((part) => part !== "");
}

function parseLabelTerm(term: string): LabelRequirement | undefined {
  const setMatch = /^([\w./-]+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term);
  if (setMatch?.[1] && setMatch[2] && setMatch[3] !== undefined) {
    const values = setMatch[3].split(",").map((value) => value.trim());
    return { op: setMatch[2] as "in" | "notin", key: setMatch[1], values };
  }
  const equality = /^([\w./-]+)\s*(!=|==|=)\s*([\w./-]*)$/.exec(term);
  if (equality?.[1] && equality[2] && equality[3] !== undefined) {
    return { op: equality[2] === "!=" ? "notin" : "in", key: equality[1], values: [equality[3]] };
  }
  const absent = /^!([\w./-]+)$/.exec(term);
  if (absent?.[1]) return { op: "absent", key: absent[1] };
  const exists = /^([\w./-]+)$/.exec(term);
  if (exists?.[1]) return { op: "exists", key: exists[1] };
  return undefined;
}

function labelMatches(labels: Record<string, string>, requirement: LabelRequirement): boolean {
  const has = Object.hasOwn(labels, requirement.key);
  switch (requirement.op) {
    case "exists":
      return has;
    case "absent":
      return !has;
    case "in":
      return has && requirement.values.includes(labels[requirement.key] ?? "");
    case "notin":
      return !has || !requirement.values.includes(labels[requirement.key] ?? "");
  }
}

export function parseLabelSelector(selector: string | null): Parsed<Matcher> {
  if (!selector) return { ok: true, value: MATCH_ALL };
  const requirements: LabelRequirement[] = [];
  for (const term of splitTopLevel(selector)) {
    const requirement = parseLabelTerm(term);
    if (!requirement) return { ok: false, error: `unable to parse requirement: found '${term}', expected: identifier` };
    requirements.push(requirement);
  }
  return {
    ok: true,
    value: (object) => {
      const labels = (object.metadata?.labels ?? {}) as Record<string, string>;
      return requirements.every((requirement) => labelMatches(labels, requirement));
    },
  };
}
