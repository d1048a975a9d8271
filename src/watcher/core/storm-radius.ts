/**
 * The storm's enrichment (docs/watcher-pipeline.md#enrichment-bundle; D431): a radius-only bundle
 * built from what the storm already holds, so it costs no API read. The head line names the
 * ancestor and the storm's reach; the `radius` section has one line per affected namespace (its
 * member count and reasons) and one line per member for the first members; a radius over the cap
 * leaves an overflow trailer naming the command that shows the ancestor. Pure.
 */
import { renderBundle } from "./enrichment-bundle.ts";
import { logfmtLine } from "./logfmt.ts";
import { type Ancestor, type Storm, ancestorDisplay, stormSeverity } from "./storm.ts";

/** Members listed one per line; the namespace lines count every member. */
export const RADIUS_MEMBER_LINES = 10;
/** Namespaces listed one per line, in order of their first member. */
export const RADIUS_NAMESPACE_LINES = 20;

/** The command that shows a storm's ancestor (overflow trailer of a dropped radius). */
export function radiusCommand(ancestor: Ancestor): string {
  const { kind, namespace, name } = ancestor;
  switch (kind) {
    case "Node":
      return `kubectl describe node ${name}`;
    case "Namespace":
      return `kubectl get events -n ${name} --field-selector type=Warning`;
    case "Registry":
      return "kubectl get events -A --field-selector reason=Failed";
    case "Cluster":
      return "kubectl get nodes -o wide";
    case "Image":
    case "Container":
      return "kubectl get pods -A -o wide";
    default:
      return namespace === ""
        ? `kubectl describe ${kind.toLowerCase()} ${name}`
        : `kubectl describe ${kind.toLowerCase()} -n ${namespace} ${name}`;
  }
}

function radiusLines(storm: Storm): string[] {
  const byNamespace = new Map<string, { count: number; reasons: Set<string> }>();
  for (const member of storm.members) {
    const entry = byNamespace.get(member.namespace) ?? { count: 0, reasons: new Set<string>() };
    entry.count++;
    entry.reasons.add(member.reason);
    byNamespace.set(member.namespace, entry);
  }
  const lines = [...byNamespace].slice(0, RADIUS_NAMESPACE_LINES).map(([namespace, entry]) =>
    logfmtLine({ kind: "radius.namespace", severity: "info", namespace }, [
      ["section", "radius"],
      ["affected", entry.count],
      ["reasons", [...entry.reasons].join(",")],
    ]),
  );
  for (const member of storm.members.slice(0, RADIUS_MEMBER_LINES))
    lines.push(
      logfmtLine(
        {
          kind: "radius.member",
          severity: member.severity,
          namespace: member.namespace,
          kind_of_object: member.kindOfObject,
          name: member.name,
          reason: member.reason,
        },
        [["section", "radius"]],
      ),
    );
  return lines;
}

/** The radius-only bundle of a storm at formation, within `capBytes`. */
export function stormRadiusBundle(storm: Storm, capBytes: number): string {
  const { ancestor } = storm;
  const namespaces = new Set(storm.members.map((member) => member.namespace)).size;
  return renderBundle(
    {
      target: {
        namespace: ancestor.namespace,
        kindOfObject: ancestor.kind,
        name: ancestor.name,
        workload: "",
        pods: 0,
        storm: { ancestor: ancestorDisplay(ancestor), affected: storm.members.length, affectedNamespaces: namespaces },
      },
      sections: { radius: radiusLines(storm) },
      command: () => radiusCommand(ancestor),
    },
    capBytes,
  ).bundle;
}

/** Whether the storm's severity is one `--enrich` enriches. */
export const stormEnriched = (storm: Storm, severities: ReadonlySet<string>) => severities.has(stormSeverity(storm));
