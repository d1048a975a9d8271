/**
 * The enrichment bundle (docs/watcher-pipeline.md#enrichment-bundle; D103): logfmt text, one
 * finding per line. A head line names the target and the sections included; section bodies follow
 * in the fixed order spec (describe), delta (events), edges, radius, logs (log tails); the byte cap
 * drops whole sections from the first that does not fit onwards; then overflow trailers naming the
 * command that reproduces each dropped section, then one error trailer per failed stage. Trailers
 * do not count against the cap. Pure.
 */
import { logfmtLine } from "./logfmt.ts";

export const SECTION_ORDER = ["spec", "delta", "edges", "radius", "logs"] as const;
export type SectionName = (typeof SECTION_ORDER)[number];
export type EnrichStage = "resolve" | SectionName;

export interface BundleTarget {
  namespace: string;
  kindOfObject: string;
  name: string;
  /** `Kind/ns/name` of the resolved top workload. */
  workload: string;
  pods: number;
  /** Resources that could not be read (`skipped=secrets,configmaps`). */
  skipped?: string[];
  /** A storm's head line names its ancestor and reach in place of `workload=` and `pods=` (D431). */
  storm?: { ancestor: string; affected: number; affectedNamespaces: number };
}

export interface BundleInput {
  target: BundleTarget;
  /** Section bodies that were computed; an empty body means nothing abnormal and is left out. */
  sections: Partial<Record<SectionName, string[]>>;
  /** Sections not computed by design (they appear as overflow trailers). */
  notComputed?: SectionName[];
  errors?: Array<{ stage: EnrichStage; error: string }>;
  /** The command that reproduces a section (overflow trailers). */
  command: (section: SectionName) => string;
}

export interface RenderedBundle {
  bundle: string;
  included: SectionName[];
  dropped: SectionName[];
}

const ERROR_TEXT_CAP = 200;

function cutError(text: string): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= ERROR_TEXT_CAP) return text;
  return `${new TextDecoder().decode(bytes.slice(0, ERROR_TEXT_CAP)).replace(/\uFFFD$/, "")}…`;
}

function headLine(target: BundleTarget, sections: SectionName[]): string {
  const details: Array<[string, string | number]> = target.storm
    ? [
        ["ancestor", target.storm.ancestor],
        ["affected", target.storm.affected],
        ["affected_namespaces", target.storm.affectedNamespaces],
      ]
    : [
        ["workload", target.workload],
        ["pods", target.pods],
      ];
  if (target.skipped && target.skipped.length > 0) details.push(["skipped", target.skipped.join(",")]);
  if (sections.length > 0) details.push(["sections", sections.join(",")]);
  return logfmtLine(
    {
      kind: "bundle.target",
      severity: "info",
      namespace: target.namespace,
      kind_of_object: target.kindOfObject,
      name: target.name,
    },
    details,
  );
}

const byteLength = (text: string) => new TextEncoder().encode(text).length;

export function renderBundle(input: BundleInput, capBytes: number): RenderedBundle {
  const present = SECTION_ORDER.filter((name) => (input.sections[name]?.length ?? 0) > 0);
  let budget = capBytes - byteLength(headLine(input.target, present));
  const included: SectionName[] = [];
  const dropped: SectionName[] = [];
  let body = "";
  for (const name of present) {
    const text = (input.sections[name] ?? []).join("");
    if (dropped.length === 0 && byteLength(text) <= budget) {
      budget -= byteLength(text);
      included.push(name);
      body += text;
    } else dropped.push(name);
  }
  const overflow = SECTION_ORDER.filter((name) => dropped.includes(name) || (input.notComputed ?? []).includes(name));
  const trailers = overflow.map((name) => `overflow section=${name} cmd=${JSON.stringify(input.command(name))}\n`);
  for (const failure of input.errors ?? [])
    trailers.push(
      logfmtLine({ kind: "enrichment_error" }, [
        ["stage", failure.stage],
        ["error", cutError(failure.error)],
      ]).replace(/^kind=enrichment_error/, "enrichment_error"),
    );
  return { bundle: headLine(input.target, included) + body + trailers.join(""), included, dropped };
}
