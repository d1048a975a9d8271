/**
 * The two representations of an Event: core/v1 (stored) and events.k8s.io/v1 (converted on the
 * way out and on the way in), with the apiserver's field mapping: involvedObject ⇄ regarding,
 * message ⇄ note, source ⇄ deprecatedSource, count ⇄ deprecatedCount, first/lastTimestamp ⇄
 * deprecatedFirst/LastTimestamp, reportingComponent ⇄ reportingController.
 */
import type { KubeObject } from "./selectors.ts";

function copyDefined(target: KubeObject, key: string, value: unknown): void {
  if (value !== undefined) target[key] = value;
}

/** core/v1 Event → events.k8s.io/v1 Event. */
export function toEventsV1(core: KubeObject): KubeObject {
  const result: KubeObject = { kind: "Event", apiVersion: "events.k8s.io/v1", metadata: core.metadata ?? {} };
  result.eventTime = core.eventTime ?? null;
  copyDefined(result, "series", core.series);
  copyDefined(result, "reportingController", core.reportingComponent);
  copyDefined(result, "reportingInstance", core.reportingInstance);
  copyDefined(result, "action", core.action);
  copyDefined(result, "reason", core.reason);
  copyDefined(result, "regarding", core.involvedObject);
  copyDefined(result, "related", core.related);
  copyDefined(result, "note", core.message);
  copyDefined(result, "type", core.type);
  copyDefined(result, "deprecatedSource", core.source);
  copyDefined(result, "deprecatedFirstTimestamp", core.firstTimestamp);
  copyDefined(result, "deprecatedLastTimestamp", core.lastTimestamp);
  copyDefined(result, "deprecatedCount", core.count);
  return result;
}

/** events.k8s.io/v1 Event → core/v1 Event (how the fake stores it). */
export function fromEventsV1(v1: KubeObject): KubeObject {
  const result: KubeObject = { kind: "Event", apiVersion: "v1", metadata: v1.metadata ?? {} };
  result.involvedObject = v1.regarding ?? {};
  copyDefined(result, "reason", v1.reason);
  copyDefined(result, "message", v1.note);
  copyDefined(
    result,
    "source",
    v1.deprecatedSource ?? (v1.reportingController ? { component: v1.reportingController } : undefined),
  );
  copyDefined(result, "firstTimestamp", v1.deprecatedFirstTimestamp);
  copyDefined(result, "lastTimestamp", v1.deprecatedLastTimestamp);
  copyDefined(result, "count", v1.deprecatedCount);
  copyDefined(result, "type", v1.type);
  copyDefined(result, "eventTime", v1.eventTime);
  copyDefined(result, "series", v1.series);
  copyDefined(result, "action", v1.action);
  copyDefined(result, "related", v1.related);
  copyDefined(result, "reportingComponent", v1.reportingController);
  copyDefined(result, "reportingInstance", v1.reportingInstance);
  return result;
}
