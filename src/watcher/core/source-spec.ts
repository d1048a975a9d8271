/**
 * The source contract (docs/watcher-pipeline.md#sources, D375): a source is data plus a detector.
 * The data says what it watches and polls and which grants it needs; the detector is its
 * judgement: it is told every change of a watched object, every poll answer and a periodic tick,
 * and answers with the signals to emit. Detectors hold their own state and read time only from
 * the `now` they are given, so every threshold is decided in process, in a unit test; the host
 * (sources/detector-source.ts) runs the informers, polls and ticks around it. Pure types.
 */
import type { AccessCheck } from "./access-check.ts";
import type { OpenCondition } from "./open-conditions.ts";
import type { Signal } from "./signal.ts";

export type KubeObject = Record<string, unknown>;

export type ObjectChange = "add" | "update" | "delete";

export interface Detector {
  /**
   * An object of the watch `watch` changed. `initial` is true for the objects of the first list,
   * which fill state and (arm after sync) emit nothing, unless the source is level-triggered and
   * reports a failure that already existed once armed: its own choice.
   */
  observe(watch: string, change: ObjectChange, object: KubeObject, now: number, initial: boolean): Signal[];
  /** A poll's JSON answer (undefined when the poll failed: `error` says why). */
  polled?(poll: string, body: unknown, now: number, error?: string): Signal[];
  /** The periodic sweep (countdowns, windows, expiries), every `tickMs`. */
  tick?(now: number): Signal[];
  /**
   * The gauge series the detector's state shows now, read by the host at scrape time (a worker
   * host answers it over its channel): plain data, so it crosses a thread (D409).
   */
  series?(): SeriesFamily[];
  /**
   * The conditions it paged on that still hold (uid and reason as signalled), read by the host
   * after every observe, poll and tick: one that goes away is reported cleared, so recovery can
   * resolve its incident (D437). Absent: the source judges no clearance.
   */
  open?(): Iterable<OpenCondition>;
}

/** A gauge family a detector reports: its samples now (the host adds `watcher_` and the `cluster` label). */
export interface SeriesFamily {
  /** Without the `watcher_` prefix. */
  name: string;
  help: string;
  samples: Array<{ labels: Record<string, string>; value: number }>;
}

/** A list+watch the source keeps: `path` as the API serves it (`/apis/apps/v1/deployments`). */
export interface SourceWatch {
  name: string;
  path: string;
  /** A field selector for the list and the watch (`type=Warning`), D387. */
  fieldSelector?: string;
  /** An optional dimension: when its grant is missing the source runs without it (one loud line). */
  optional?: AccessCheck[];
  /** What the source goes without when `optional` is denied, for that line (`no PVC forecasts`), D392. */
  loses?: string;
}

/** A GET the source repeats every `everyMs` (a ConfigMap, the metrics API, a paged list). */
export interface SourcePoll {
  name: string;
  path: string;
  everyMs: number;
  /** An optional dimension, as for a watch. */
  optional?: AccessCheck[];
  loses?: string;
  /**
   * A paged list: the host follows `metadata.continue` with pages of this size and tells the
   * detector once, with every page's items in one list (D384).
   */
  pageSize?: number;
  /**
   * Polled only when discovery finds this resource at startup (a CRD that may not be installed):
   * checked, not access-probed; absent, the poll is left out and the startup line says so (D384).
   */
  discovery?: { groupVersion: string; resource: string };
}

/** What a source is, apart from its detector's code. */
export interface SourceSpec<S = unknown> {
  name: string;
  /**
   * Every `reason` its detector's signals carry (the triage skill keeps a reference per reason of
   * each source `auto` runs; its test reads this list, D476).
   */
  reasons: readonly string[];
  scope: "cluster" | "namespace" | "project";
  /** Grants without which it cannot run (probed at startup, re-checked later). */
  required: readonly AccessCheck[];
  /** An API group/version that must be served for it to run: absent, `auto` turns it off saying `missing`. */
  discovery?: { groupVersion: string; resources: readonly string[]; missing: string };
  watches: readonly SourceWatch[];
  polls?: readonly SourcePoll[];
  /** How often `tick` runs; absent: never. */
  tickMs?: number;
  /** How often `tick` runs for these settings (a countdown judged often enough for its length), over `tickMs`. */
  tickFor?(settings: S): number;
  /**
   * Grants and polls that depend on the settings (a namespace scope such as `--expiry-namespaces`):
   * what it answers replaces `required` and `polls` (D384).
   */
  scoped?(settings: S): { required: readonly AccessCheck[]; polls: readonly SourcePoll[] };
  /**
   * Where a missing grant is written, named in its startup line (`a Role and RoleBinding in
   * kube-system: docs/watcher.md#capacity`) when it is not the watcher's ClusterRole (D394).
   */
  grantHint?: string;
  /** The detector, from the source's settings (its thresholds, from flags). */
  detector(settings: S): Detector;
}
