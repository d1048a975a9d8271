/**
 * The `workload` source (docs/watcher.md#workload). `workload.job_failed`: a Job's
 * Failed condition turns True (warning, uid = the Job, controller its CronJob). `workload.cron_missed`:
 * a CronJob activation passed, plus a grace (5m), without `status.lastScheduleTime` reaching it
 * (uid = the CronJob): a warning at the first miss, and once more, critical, when the misses in
 * a row reach 3; a new schedule time clears it (D381). Activations are counted from the later of
 * the last schedule time (else the creation time) and the moment the CronJob was last resumed or
 * rescheduled; suspended CronJobs never miss. The schedule itself is evaluated by the function
 * in the settings (sources/cron-schedule.ts, a maintained cron library with upstream semantics),
 * so this module stays pure. Judged on the tick (every 30s); Jobs are only remembered while failed.
 */
import { goDuration, rfc3339 } from "../go-time.ts";
import type { OpenCondition } from "../open-conditions.ts";
import type { Signal } from "../signal.ts";
import type { Detector, KubeObject, ObjectChange, SourceSpec } from "../source-spec.ts";
import { condition, controller, field, listWatch, type Meta, meta, sourceSignal, text, time } from "./source-fields.ts";

/** Up to `limit` activations of `schedule` in (after, until] (epoch ms), or why it cannot be read. */
export type CronActivations = (
  schedule: string,
  timeZone: string | undefined,
  after: number,
  until: number,
  limit: number,
) => { activations: number[] } | { error: string };

export interface WorkloadSettings {
  /** How long after an activation the schedule time may still arrive. */
  graceMs: number;
  /** Misses in a row that make a miss critical. */
  criticalMisses: number;
  activations: CronActivations;
}

export const WORKLOAD_DEFAULTS: Omit<WorkloadSettings, "activations"> = { graceMs: 5 * 60_000, criticalMisses: 3 };

interface CronState {
  meta: Meta;
  schedule: string;
  timeZone: string | undefined;
  suspended: boolean;
  /** lastScheduleTime, else creationTimestamp (epoch ms; 0 unknown). */
  scheduled: number;
  /** When it was last resumed or rescheduled while watched. */
  armedAt: number;
  /** The last activation counted as missed. */
  counted?: number;
  misses: number;
  /** 0 nothing sent, 1 warning sent, 2 critical sent. */
  level: 0 | 1 | 2;
}

export class WorkloadDetector implements Detector {
  readonly #settings: WorkloadSettings;
  readonly #failedJobs = new Set<string>();
  readonly #crons = new Map<string, CronState>();

  constructor(settings: WorkloadSettings) {
    this.#settings = settings;
  }

  get size(): { failedJobs: number; cronJobs: number } {
    return { failedJobs: this.#failedJobs.size, cronJobs: this.#crons.size };
  }

  observe(watch: string, change: ObjectChange, object: KubeObject, now: number, initial: boolean): Signal[] {
    if (watch === "jobs") return this.#job(change, object, now, initial);
    if (watch === "cronjobs") this.#cronJob(change, object, now);
    return [];
  }

  /**
   * What still holds (D437): a Job whose Failed condition is True (cleared when it is deleted or
   * no longer failed; a failed Job seen at a relist counts, so a new worker confirms it), and a
   * CronJob that paged a miss (cleared by a new schedule time, a suspend, a reschedule, a delete).
   */
  *open(): Iterable<OpenCondition> {
    for (const uid of this.#failedJobs) yield { uid, reason: "job_failed" };
    for (const [uid, cron] of this.#crons) if (cron.level > 0) yield { uid, reason: "cron_missed" };
  }

  tick(now: number): Signal[] {
    const signals: Signal[] = [];
    for (const cron of this.#crons.values()) {
      const signal = cron.suspended ? undefined : this.#judge(cron, now);
      if (signal) signals.push(signal);
    }
    return signals;
  }

  #job(change: ObjectChange, object: KubeObject, now: number, initial: boolean): Signal[] {
    const job = meta(object);
    const failed = condition(object, "Failed");
    if (change === "delete" || failed?.status !== "True") {
      this.#failedJobs.delete(job.uid);
      return [];
    }
    if (this.#failedJobs.has(job.uid)) return [];
    this.#failedJobs.add(job.uid);
    if (initial) return [];
    const owner = controller(object);
    return [
      sourceSignal({
        kind: "workload.job_failed",
        reason: "job_failed",
        object: job,
        kindOfObject: "Job",
        severity: "warning",
        now,
        message: `Job ${job.namespace}/${job.name} failed: ${failed.reason || "Failed"}${failed.message ? `: ${failed.message}` : ""}`,
        ...(owner ? { controllerRef: `${owner.kind}/${owner.name}` } : {}),
      }),
    ];
  }

  #cronJob(change: ObjectChange, object: KubeObject, now: number): void {
    const cron = meta(object);
    if (change === "delete") {
      this.#crons.delete(cron.uid);
      return;
    }
    const schedule = text(field(object, "spec", "schedule"));
    const timeZone = text(field(object, "spec", "timeZone")) || undefined;
    const suspended = field(object, "spec", "suspend") === true;
    const scheduled =
      time(field(object, "status", "lastScheduleTime")) ??
      time(field(object, "metadata", "creationTimestamp")) ??
      this.#crons.get(cron.uid)?.scheduled ??
      now;
    const before = this.#crons.get(cron.uid);
    const next: CronState = {
      meta: cron,
      schedule,
      timeZone,
      suspended,
      scheduled,
      armedAt: before?.armedAt ?? Number.NEGATIVE_INFINITY,
      misses: 0,
      level: 0,
    };
    const changed = before && (before.schedule !== schedule || before.timeZone !== timeZone);
    const resumed = before?.suspended === true && !suspended;
    if (changed || resumed) next.armedAt = now;
    // Carry the miss count while nothing resets it: the same schedule, still active, no new schedule time.
    if (before && !changed && !suspended && !resumed && scheduled <= before.scheduled) {
      next.misses = before.misses;
      next.level = before.level;
      if (before.counted !== undefined) next.counted = before.counted;
    }
    this.#crons.set(cron.uid, next);
  }

  #judge(cron: CronState, now: number): Signal | undefined {
    const { criticalMisses, graceMs } = this.#settings;
    const after = Math.max(cron.scheduled, cron.armedAt, cron.counted ?? Number.NEGATIVE_INFINITY);
    const found = this.#settings.activations(cron.schedule, cron.timeZone, after, now - graceMs, criticalMisses);
    if ("error" in found || found.activations.length === 0) return undefined;
    cron.misses += found.activations.length;
    cron.counted = found.activations[found.activations.length - 1] ?? after;
    const level = cron.misses >= criticalMisses ? 2 : 1;
    if (level <= cron.level) return undefined;
    cron.level = level;
    const { meta: object } = cron;
    const last = cron.scheduled > 0 ? rfc3339(cron.scheduled) : "never";
    return sourceSignal({
      kind: "workload.cron_missed",
      reason: "cron_missed",
      object,
      kindOfObject: "CronJob",
      severity: level === 2 ? "critical" : "warning",
      now,
      message: `CronJob ${object.namespace}/${object.name} missed ${cron.misses} activation(s) in a row of "${cron.schedule}"${cron.timeZone ? ` (${cron.timeZone})` : ""}: due at ${rfc3339(cron.counted ?? now)}, no schedule time after ${goDuration(graceMs)} grace (last scheduled ${last})`,
    });
  }
}

export const WORKLOAD_SPEC: SourceSpec<WorkloadSettings> = {
  name: "workload",
  reasons: ["job_failed", "cron_missed"],
  scope: "cluster",
  required: [...listWatch("batch", "jobs"), ...listWatch("batch", "cronjobs")],
  watches: [
    { name: "jobs", path: "/apis/batch/v1/jobs" },
    { name: "cronjobs", path: "/apis/batch/v1/cronjobs" },
  ],
  tickMs: 30_000,
  detector: (settings) => new WorkloadDetector(settings),
};
