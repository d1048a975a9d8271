/**
 * The critical incident the enrichment tests hand a gatherer directly (no dispatcher): an object's
 * kind, namespace, name and uid, everything else fixed.
 */
import type { Signal } from "../../src/watcher/core/signal.ts";

export function enrichSignal(kindOfObject: string, namespace: string, name: string, uid: string): Signal {
  return {
    kind: "cluster-event",
    reason: "BackOff",
    namespace,
    kindOfObject,
    name,
    uid,
    message: "",
    eventCount: 1,
    firstSeen: 0,
    lastSeen: 0,
    type: "Warning",
    severity: "critical",
  };
}
