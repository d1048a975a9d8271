/**
 * The quota source's pure parts (D398-D399): Kubernetes quantities read as numbers (millicores,
 * binary and decimal suffixes, exponents, plain counts); ResourceQuota lists read as usages; the
 * forecast fires at its thresholds and not before (usage 90%/98%, ETA 7d/48h from a least-squares
 * fit of at least 4 samples), pages once per level, clears with hysteresis and may page again;
 * only the top 10 by ratio plus those at --quota-warn are fitted; a quota that goes is forgotten;
 * the settings come from the flags.
 */
import { describe, expect, test } from "bun:test";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { parseQuantity } from "../../../src/watcher/core/quantity.ts";
import {
  QUOTA_DEFAULTS,
  QuotaDetector,
  type QuotaSettings,
  amount,
  leastSquaresSlope,
} from "../../../src/watcher/core/sources/quota-detector.ts";
import { type QuotaUsage, resourceQuotaUsages } from "../../../src/watcher/core/sources/quota-usage.ts";
import { quotaSettings } from "../../../src/watcher/sources/quota-source.ts";

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const T0 = Date.parse("2026-11-01T00:00:00Z");

describe("parseQuantity", () => {
  test.each([
    ["500m", 0.5],
    ["2", 2],
    ["1.5", 1.5],
    ["100Mi", 100 * 2 ** 20],
    ["1Gi", 2 ** 30],
    ["12Ki", 12 * 1024],
    ["1G", 1e9],
    ["250M", 250e6],
    ["3k", 3000],
    ["1e3", 1000],
    ["5E-2", 0.05],
    ["1E", 1e18],
    ["100n", 100e-9],
    ["7u", 7e-6],
    [".5", 0.5],
    ["+4", 4],
    ["0", 0],
  ])("%s is %d", (text, value) => {
    expect(parseQuantity(text)).toBeCloseTo(value, 12);
  });

  test.each(["", "abc", "1Xi", "1e", "Gi", "1.2.3", "--1", "1 Gi"])("%p is not a quantity", (text) => {
    expect(parseQuantity(text)).toBeUndefined();
  });

  test("a number passes through; anything else is not a quantity", () => {
    expect(parseQuantity(3)).toBe(3);
    expect(parseQuantity(undefined)).toBeUndefined();
    expect(parseQuantity(Number.NaN)).toBeUndefined();
  });
});

test("a ResourceQuota list reads as one usage per resource, with the texts kept and unreadable ones left out", () => {
  const usages = resourceQuotaUsages({
    items: [
      {
        metadata: { namespace: "shop", name: "compute" },
        status: {
          hard: { "requests.cpu": "2", "requests.memory": "4Gi", pods: "10", bogus: "lots" },
          used: { "requests.cpu": "1500m", "requests.memory": "1Gi" },
        },
      },
      { metadata: { namespace: "ci", name: "empty" } },
    ],
  });
  expect(usages.map((usage) => [usage.uid, usage.used, usage.hard, usage.usedText, usage.hardText])).toEqual([
    ["quota:shop/compute/requests.cpu", 1.5, 2, "1500m", "2"],
    ["quota:shop/compute/requests.memory", 2 ** 30, 4 * 2 ** 30, "1Gi", "4Gi"],
    ["quota:shop/compute/pods", 0, 10, "0", "10"],
  ]);
  expect(resourceQuotaUsages(undefined)).toEqual([]);
});

function usage(name: string, used: number, hard = 100, resource = "pods"): QuotaUsage {
  return {
    uid: `quota:shop/${name}/${resource}`,
    namespace: "shop",
    kindOfObject: "ResourceQuota",
    name,
    resource,
    used,
    hard,
    usedText: String(used),
    hardText: String(hard),
  };
}

const settings = (extra: Partial<QuotaSettings> = {}): QuotaSettings => ({ ...QUOTA_DEFAULTS, ...extra });

test("amounts in a message use the units of the limit", () => {
  expect(amount(2 * 2 ** 30, "20Gi")).toBe("2Gi");
  expect(amount(1536, "4Ki")).toBe("1.5Ki");
  expect(amount(2500, "10k")).toBe("2.5k");
  expect(amount(0.25, "2")).toBe("0.25");
  expect(amount(10, "100")).toBe("10");
});

test("least squares: the slope of a line, undefined without spread", () => {
  expect(leastSquaresSlope([0, 1, 2, 3].map((i) => ({ at: i * 10, used: 5 + 2 * i })))).toBeCloseTo(0.2, 12);
  expect(leastSquaresSlope([{ at: 1, used: 1 }])).toBeUndefined();
  expect(
    leastSquaresSlope([
      { at: 1, used: 1 },
      { at: 1, used: 3 },
    ]),
  ).toBeUndefined();
});

describe("quota.forecast", () => {
  test("usage: 89% is quiet, 90% is one warning (on the first poll: level-triggered), 98% one critical", () => {
    const detector = new QuotaDetector(settings());
    expect(detector.judge([usage("a", 89)], T0)).toEqual([]);
    const [warning, ...rest] = detector.judge([usage("a", 90)], T0 + HOUR);
    expect(rest).toEqual([]);
    expect(warning).toMatchObject({
      kind: "quota.forecast",
      reason: "quota_forecast",
      namespace: "shop",
      kindOfObject: "ResourceQuota",
      name: "a",
      uid: "quota:shop/a/pods",
      severity: "warning",
      type: "",
      eventCount: 1,
      lastSeen: T0 + HOUR,
    });
    expect(warning?.message).toStartWith("ResourceQuota shop/a pods at 90.0% (used 90 of 100)");
    expect(detector.judge([usage("a", 91)], T0 + 2 * HOUR)).toEqual([]);
    expect(detector.judge([usage("a", 98)], T0 + 3 * HOUR).map((signal) => signal.severity)).toEqual(["critical"]);
    expect(detector.judge([usage("a", 99)], T0 + 4 * HOUR)).toEqual([]);
    const fresh = new QuotaDetector(settings());
    expect(fresh.judge([usage("b", 95)], T0).map((signal) => signal.severity)).toEqual(["warning"]);
  });

  test("ETA: growth that reaches the limit in under 7d warns, under 48h is critical; not before 4 samples", () => {
    const detector = new QuotaDetector(settings());
    // 10 a day from 40: the limit (100) in 5.7d after the 4th sample.
    for (let day = 0; day < 3; day++) expect(detector.judge([usage("a", 40 + 10 * day)], T0 + day * DAY)).toEqual([]);
    const [warning] = detector.judge([usage("a", 70)], T0 + 3 * DAY);
    expect(warning?.severity).toBe("warning");
    expect(warning?.message).toContain("growing 10/day over the last 72h0m0s (4 points)");
    expect(warning?.message).toContain("the limit is reached in ~3.0d at this slope");
    // D417: the payload's forecast, 3 days on, fitted over the 7d window.
    expect(warning?.forecast).toEqual({ eta: T0 + 6 * DAY, confidenceBasis: "linear-7d-window" });
    expect(detector.judge([usage("a", 80)], T0 + 4 * DAY)).toEqual([]);
    // 81 at day 4.5 bends the fit; at 86 the ETA falls under 48h.
    expect(detector.judge([usage("a", 86)], T0 + 4.5 * DAY).map((signal) => signal.severity)).toEqual(["critical"]);
  });

  test("slow growth far from the limit is quiet; a flat or shrinking quota never forecasts", () => {
    const detector = new QuotaDetector(settings());
    for (let day = 0; day < 6; day++) expect(detector.judge([usage("slow", 10 + day)], T0 + day * DAY)).toEqual([]);
    for (let day = 0; day < 6; day++)
      expect(detector.judge([usage("flat", 85, 100, "cpu")], T0 + (6 + day) * DAY)).toEqual([]);
  });

  test("clears when back under 90% with the ETA beyond 14d, then pages again", () => {
    const detector = new QuotaDetector(settings());
    expect(detector.judge([usage("a", 92)], T0)).toHaveLength(1);
    expect(detector.judge([usage("a", 85)], T0 + HOUR)).toEqual([]);
    expect(detector.judge([usage("a", 93)], T0 + 2 * HOUR)).toHaveLength(1);
  });

  test("hysteresis: under 90% with an ETA between 7d and 14d stays latched (no second page)", () => {
    const detector = new QuotaDetector(settings({ windowMs: 30 * DAY }));
    // Growth of 1/day from 80: the 4th sample is the first fit, ETA 17d: quiet.
    for (let day = 0; day < 4; day++) expect(detector.judge([usage("a", 80 + day)], T0 + day * DAY)).toEqual([]);
    expect(detector.judge([usage("a", 90)], T0 + 4 * DAY)).toHaveLength(1);
    // Back to 84 at day 5: the fit's ETA is ~11.7d: no verdict, but still latched.
    expect(detector.judge([usage("a", 84)], T0 + 5 * DAY)).toEqual([]);
    expect(detector.judge([usage("a", 90)], T0 + 5.5 * DAY)).toEqual([]);
  });

  test("only the top 10 by ratio plus every one at --quota-warn is fitted", () => {
    // Nine flat quotas at 82-86%, two growing 20 a day: grow-b ranks 10th, grow-a 11th.
    const at = (day: number) => [
      ...Array.from({ length: 9 }, (_, i) => usage(`high${i}`, 82 + 0.5 * i)),
      usage("grow-a", 20 + 20 * day),
      usage("grow-b", 21 + 20 * day),
    ];
    const run = (warnRatio: number) => {
      const detector = new QuotaDetector(settings({ warnRatio }));
      for (let day = 0; day < 3; day++) expect(detector.judge(at(day), T0 + day * DAY)).toEqual([]);
      return detector
        .judge(at(3), T0 + 3 * DAY)
        .map((signal) => `${signal.name}:${signal.severity}`)
        .sort();
    };
    // --quota-warn 0.95: only the top 10 are fitted, grow-a (80%, 11th) is not.
    expect(run(0.95)).toEqual(["grow-b:critical"]);
    // --quota-warn 0.8: grow-a is at it, so fitted too.
    expect(run(0.8)).toEqual(["grow-a:critical", "grow-b:critical"]);
  });

  test("a quota that goes is forgotten; hard 0 is not judged; history is bounded", () => {
    const detector = new QuotaDetector(settings({ maxSamples: 8 }));
    expect(detector.judge([usage("a", 95), usage("zero", 0, 0)], T0)).toHaveLength(1);
    expect(detector.size).toBe(1);
    expect(detector.judge([], T0 + HOUR)).toEqual([]);
    expect(detector.size).toBe(0);
    expect(detector.judge([usage("a", 95)], T0 + 2 * HOUR)).toHaveLength(1);
    for (let i = 0; i < 100; i++) detector.judge([usage("a", 10)], T0 + 3 * HOUR + i * 60_000);
    expect(detector.size).toBe(1);
  });

  test("samples older than --quota-window leave the fit", () => {
    // 10 per 12h to 70, flat at 70 for three days, then 90: a 2d window has forgotten the growth
    // (cleared while flat, so 90 pages again); a 30d window still fits it (latched critical).
    const series = [...Array.from({ length: 8 }, (_, i) => 10 * i), ...Array.from({ length: 7 }, () => 70), 90];
    const last = (windowMs: number) => {
      const detector = new QuotaDetector(settings({ windowMs }));
      let answer: string[] = [];
      series.forEach((used, i) => {
        answer = detector.judge([usage("a", used)], T0 + i * 12 * HOUR).map((signal) => signal.severity);
      });
      return answer;
    };
    expect(last(2 * DAY)).toEqual(["critical"]);
    expect(last(30 * DAY)).toEqual([]);
  });
});

test("settings come from --quota-poll, --quota-window and --quota-warn", () => {
  const parsed = watcherConfigFromArgv(["--dry-run", "--quota-poll=1m", "--quota-window=24h", "--quota-warn=0.5"]);
  if (!parsed.ok) throw new Error(parsed.error);
  expect(quotaSettings(parsed.value.values)).toMatchObject({ pollMs: 60_000, windowMs: DAY, warnRatio: 0.5 });
  for (const bad of ["--quota-warn=1", "--quota-warn=0", "--quota-poll=0s", "--quota-window=0s"])
    expect(watcherConfigFromArgv(["--dry-run", bad]).ok).toBe(false);
});
