/**
 * The filter (docs/watcher-pipeline.md#filter): the reason allow-list, namespace deny- and
 * allow-lists and the leading-edge debounces, in that order. `decideFilter` names the gate that
 * rejected a signal, or returns undefined when it passes. Pure.
 */
import { canonicalReasonForEvent } from "./reasons.ts";
import type { PullClass } from "./pull-class.ts";
import { CLUSTER_EVENT_KIND, type Signal } from "./signal.ts";

export type FilterGate =
  | "reason_not_allowed"
  | "namespace_excluded"
  | "namespace_not_allowed"
  | "unhealthy_debounce"
  | "crashloop_debounce"
  | "imagepull_transient_debounce";

export interface FilterSettings {
  reasons: ReadonlySet<string>;
  /** Empty: every namespace. */
  allowNamespaces: ReadonlySet<string>;
  excludeNamespaces: ReadonlySet<string>;
  backoffMinCount: number;
  imagePullTransientMinCount: number;
  unhealthyMinCount: number;
}

function isEventKind(kind: string): boolean {
  return kind === CLUSTER_EVENT_KIND || kind === `${CLUSTER_EVENT_KIND}-followup` || kind === "";
}

export function decideFilter(signal: Signal, settings: FilterSettings, pullClass: PullClass): FilterGate | undefined {
  const eventKind = isEventKind(signal.kind);
  if (eventKind && !settings.reasons.has(signal.reason)) return "reason_not_allowed";
  if (signal.namespace !== "" && settings.excludeNamespaces.has(signal.namespace)) return "namespace_excluded";
  if (settings.allowNamespaces.size > 0) {
    if (signal.namespace === "" ? eventKind : !settings.allowNamespaces.has(signal.namespace))
      return "namespace_not_allowed";
  }
  if (!eventKind) return undefined;
  const family = canonicalReasonForEvent(signal.reason, signal.message);
  if (family === "Unhealthy" && signal.eventCount < settings.unhealthyMinCount) return "unhealthy_debounce";
  if (family === "CrashLoopBackOff" && signal.eventCount < settings.backoffMinCount) return "crashloop_debounce";
  if (
    family === "ImagePullBackOff" &&
    pullClass === "retryable" &&
    signal.eventCount < settings.imagePullTransientMinCount
  ) {
    return "imagepull_transient_debounce";
  }
  return undefined;
}
