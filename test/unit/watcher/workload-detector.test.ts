/**
 * The workload detector and its cron schedules (D381): a Job that fails is one job_failed, not on
 * the first list; a CronJob activation plus the grace without a new schedule time is a warning,
 * three in a row one critical, a new schedule time clears; suspended CronJobs never miss;
 * schedules follow upstream cron (five fields, descriptors, @every, spec.timeZone).
 */
import { describe, expect, test } from "bun:test";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import {
  WORKLOAD_DEFAULTS,
  WORKLOAD_SPEC,
  WorkloadDetector,
  type WorkloadSettings,
} from "../../../src/watcher/core/sources/workload-detector.ts";
import { cronActivations, upstreamExpression } from "../../../src/watcher/sources/cron-schedule.ts";
import { sourceSettings } from "../../../src/watcher/sources/source-registry.ts";
import { cronJob, iso, job, MIN, T0 } from "./workload-objects.ts";

const settings: WorkloadSettings = { graceMs: 5 * MIN, criticalMisses: 3, activations: cronActivations };
const HOUR = 60 * MIN;

describe("workload.job_failed", () => {
  test("a Job's Failed condition turning True fires once; the first list and deletes do not", () => {
    const detector = new WorkloadDetector(settings);
    expect(detector.observe("jobs", "add", job("old", true), T0, true)).toEqual([]);
    expect(detector.observe("jobs", "add", job("j1", false, "nightly"), T0, false)).toEqual([]);
    const [signal, ...rest] = detector.observe("jobs", "update", job("j1", true, "nightly"), T0 + MIN, false);
    expect(rest).toEqual([]);
    expect(signal).toMatchObject({
      kind: "workload.job_failed",
      reason: "job_failed",
      uid: "j1",
      kindOfObject: "Job",
      namespace: "batch",
      severity: "warning",
      controllerRef: "CronJob/nightly",
      firstSeen: T0 + MIN,
    });
    expect(signal?.message).toContain("BackoffLimitExceeded");
    expect(detector.observe("jobs", "update", job("j1", true, "nightly"), T0 + 2 * MIN, false)).toEqual([]);
    expect(detector.size.failedJobs).toBe(2);
    detector.observe("jobs", "delete", job("j1", true), T0, false);
    detector.observe("jobs", "delete", job("old", true), T0, false);
    expect(detector.size.failedJobs).toBe(0);
  });
});

describe("workload.cron_missed", () => {
  // Hourly at :00; last scheduled at T0 (12:00). The 13:00 activation is due by 13:05.
  const hourly = (lastSchedule: number, extra: { suspend?: boolean; timeZone?: string } = {}) =>
    cronJob("c1", "@hourly", { created: T0 - 24 * HOUR, lastSchedule, ...extra });

  test("an activation plus the grace without a new schedule time is a warning, not before", () => {
    const detector = new WorkloadDetector(settings);
    detector.observe("cronjobs", "add", hourly(T0), T0, true);
    expect(detector.tick(T0 + HOUR + 5 * MIN - 1)).toEqual([]);
    const [signal, ...rest] = detector.tick(T0 + HOUR + 5 * MIN);
    expect(rest).toEqual([]);
    expect(signal).toMatchObject({
      kind: "workload.cron_missed",
      reason: "cron_missed",
      uid: "c1",
      kindOfObject: "CronJob",
      severity: "warning",
    });
    expect(signal?.message).toContain(`due at ${iso(T0 + HOUR).replace(".000", "")}`);
    expect(detector.tick(T0 + HOUR + 10 * MIN)).toEqual([]);
  });

  test("three misses in a row: one critical, then silence; a new schedule time clears, so a later miss fires again", () => {
    const detector = new WorkloadDetector(settings);
    detector.observe("cronjobs", "add", hourly(T0), T0, true);
    expect(detector.tick(T0 + HOUR + 5 * MIN)).toMatchObject([{ severity: "warning" }]);
    expect(detector.tick(T0 + 2 * HOUR + 5 * MIN)).toEqual([]);
    expect(detector.tick(T0 + 3 * HOUR + 5 * MIN)).toMatchObject([{ severity: "critical" }]);
    expect(detector.tick(T0 + 4 * HOUR + 5 * MIN)).toEqual([]);
    detector.observe("cronjobs", "update", hourly(T0 + 5 * HOUR), T0 + 5 * HOUR, false);
    expect(detector.tick(T0 + 5 * HOUR + 30 * MIN)).toEqual([]);
    expect(detector.tick(T0 + 6 * HOUR + 5 * MIN)).toMatchObject([{ severity: "warning" }]);
  });

  test("a CronJob stopped for long before the watcher started is critical at the first judgement", () => {
    const detector = new WorkloadDetector(settings);
    detector.observe("cronjobs", "add", hourly(T0 - 10 * HOUR), T0, true);
    expect(detector.tick(T0)).toMatchObject([{ severity: "critical" }]);
  });

  test("suspended CronJobs never miss; resuming counts from the resume", () => {
    const detector = new WorkloadDetector(settings);
    detector.observe("cronjobs", "add", hourly(T0, { suspend: true }), T0, true);
    expect(detector.tick(T0 + 5 * HOUR)).toEqual([]);
    detector.observe("cronjobs", "update", hourly(T0), T0 + 5 * HOUR + 30 * MIN, false);
    expect(detector.tick(T0 + 6 * HOUR + 4 * MIN)).toEqual([]);
    expect(detector.tick(T0 + 6 * HOUR + 5 * MIN)).toMatchObject([{ severity: "warning" }]);
  });

  test("spec.timeZone is honoured", () => {
    const detector = new WorkloadDetector(settings);
    // 09:00 in Tokyo is 00:00 UTC; last scheduled the day before (T0 is 12:00 UTC).
    const tokyo = cronJob("c2", "0 9 * * *", {
      created: T0 - 48 * HOUR,
      lastSchedule: Date.parse("2026-07-01T00:00:00Z"),
      timeZone: "Asia/Tokyo",
    });
    detector.observe("cronjobs", "add", tokyo, T0, true);
    expect(detector.tick(Date.parse("2026-07-02T00:04:59Z"))).toEqual([]);
    expect(detector.tick(Date.parse("2026-07-02T00:05:00Z"))).toMatchObject([{ uid: "c2", severity: "warning" }]);
  });

  test("an unreadable schedule is never judged; deletes forget", () => {
    const detector = new WorkloadDetector(settings);
    detector.observe("cronjobs", "add", cronJob("c3", "0 0 1 1 * *", { created: T0 - 48 * HOUR }), T0, true);
    expect(detector.tick(T0 + 48 * HOUR)).toEqual([]);
    detector.observe("cronjobs", "delete", cronJob("c3", "x", { created: T0 }), T0, false);
    expect(detector.size.cronJobs).toBe(0);
  });
});

describe("upstream cron semantics", () => {
  const from = Date.parse("2026-03-01T00:00:00Z");
  const next = (schedule: string, timeZone?: string, limit = 3) => {
    const found = cronActivations(schedule, timeZone, from, from + 400 * 24 * HOUR, limit);
    return "error" in found ? found.error : found.activations.map((at) => new Date(at).toISOString());
  };

  test("five fields, descriptors and names; the library's extensions refused", () => {
    expect(next("@hourly", undefined, 2)).toEqual(["2026-03-01T01:00:00.000Z", "2026-03-01T02:00:00.000Z"]);
    expect(next("@midnight", undefined, 1)).toEqual(["2026-03-02T00:00:00.000Z"]);
    expect(next("@annually", undefined, 1)).toEqual(["2027-01-01T00:00:00.000Z"]);
    // 2026-03-01 is a Sunday: the next Sunday midnight strictly after it.
    expect(next("0 0 * * SUN", undefined, 1)).toEqual(["2026-03-08T00:00:00.000Z"]);
    // Day of month and day of week both restricted: either matches (Vixie/robfig semantics).
    expect(next("0 0 13 * MON", undefined, 3)).toEqual([
      "2026-03-02T00:00:00.000Z",
      "2026-03-09T00:00:00.000Z",
      "2026-03-13T00:00:00.000Z",
    ]);
    for (const refused of ["0 0 1 1 * *", "* * * *", "0 0 L * *", "0 0 * * 1#1", "H * * * *", "@minutely", "@weekdays"])
      expect(upstreamExpression(refused)).toHaveProperty("error");
    expect(next("@every 90m", undefined, 2)).toEqual(["2026-03-01T01:30:00.000Z", "2026-03-01T03:00:00.000Z"]);
    expect(typeof next("0 0 * * *", "Nowhere/City")).toBe("string");
  });

  test("time zones, across a DST change", () => {
    expect(next("30 1 * * *", "America/New_York", 2)).toEqual(["2026-03-01T06:30:00.000Z", "2026-03-02T06:30:00.000Z"]);
    const summer = cronActivations(
      "30 1 * * *",
      "America/New_York",
      Date.parse("2026-03-09T00:00:00Z"),
      Date.parse("2026-03-10T00:00:00Z"),
      1,
    );
    expect(summer).toEqual({ activations: [Date.parse("2026-03-09T05:30:00Z")] });
  });
});

test("workload defaults without a flag: 5m grace, critical at 3 misses, a 30s tick, the reference's grants", () => {
  expect(WORKLOAD_DEFAULTS).toEqual({ graceMs: 5 * MIN, criticalMisses: 3 });
  expect(WORKLOAD_SPEC.tickMs).toBe(30_000);
  expect(WORKLOAD_SPEC.required.map((check) => `${check.verb} ${check.group}/${check.resource}`)).toEqual([
    "list batch/jobs",
    "watch batch/jobs",
    "list batch/cronjobs",
    "watch batch/cronjobs",
  ]);
  const config = watcherConfigFromArgv(["--daemon-url=http://127.0.0.1:1", "--token-env=T"]);
  if (!config.ok) throw new Error(config.error);
  expect(sourceSettings("workload", config.value)).toEqual({ ...WORKLOAD_DEFAULTS, activations: cronActivations });
});
