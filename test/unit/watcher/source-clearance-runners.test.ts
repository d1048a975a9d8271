/**
 * Source clearance (D437) of the sources beyond the plain watch ones: saturation's forecasts,
 * capacity's scale-up gaps, aged pending pods and cluster forecasts, and token-burn's burns are
 * open while they hold and gone as each source's clearing rule says.
 */
import { expect, test } from "bun:test";
import type { OpenCondition } from "../../../src/watcher/core/open-conditions.ts";
import { CAPACITY_DEFAULTS, CapacityDetector } from "../../../src/watcher/core/sources/capacity-source.ts";
import { SATURATION_DEFAULTS, SaturationDetector } from "../../../src/watcher/core/sources/saturation-detector.ts";
import {
  TOKEN_BURN_DEFAULTS,
  TOKEN_BURN_POLL,
  TokenBurnDetector,
} from "../../../src/watcher/core/sources/token-burn-detector.ts";
import { configMap, pod, yamlStatus } from "./capacity-objects.ts";
import { MIN, T0 } from "./workload-objects.ts";

const open = (detector: { open?(): Iterable<OpenCondition> }) => [...(detector.open?.() ?? [])];

test("saturation: a paged forecast is open until its ETA moves beyond 2 × warn", () => {
  const detector = new SaturationDetector({ ...SATURATION_DEFAULTS, windowMs: 20 * MIN });
  const pods = (memory: string) => ({
    items: [
      {
        metadata: { uid: "u1", name: "web-1", namespace: "prod" },
        spec: { nodeName: "node-1", containers: [{ name: "app", resources: { limits: { memory } } }] },
      },
    ],
  });
  const sample = (i: number) => {
    const at = T0 + i * MIN;
    const body = {
      items: [
        {
          metadata: { name: "web-1", namespace: "prod" },
          timestamp: new Date(at).toISOString(),
          containers: [{ name: "app", usage: { memory: `${400 + 10 * i}Mi` } }],
        },
      ],
    };
    return detector.polled("pod-metrics", body, at);
  };
  detector.polled("pods", pods("1Gi"), T0);
  const fired = [];
  for (let i = 0; i <= 12; i++) fired.push(...sample(i));
  expect(fired).toHaveLength(1);
  expect(open(detector)).toEqual([{ uid: "u1/app", reason: "forecast_memory" }]);
  detector.polled("pods", pods("3Gi"), T0 + 13 * MIN - 1);
  sample(13);
  expect(open(detector)).toEqual([]);
});

test("capacity: a scale-up gap, an aged pending pod and their clearing", () => {
  const yaml = (text: string) => Bun.YAML.parse(text);
  const detector = new CapacityDetector({ ...CAPACITY_DEFAULTS, parseYaml: yaml });
  const group = (scaleUp: string, ready: number) =>
    configMap(yamlStatus([{ name: "pool-a", scaleUp, since: T0, ready, target: 5 }]));
  detector.observe("pods", "add", pod({ uid: "p1", unschedulableSince: T0 }), T0, true);
  const signals = detector.polled("autoscaler-status", group("InProgress", 3), T0 + 5 * MIN);
  expect(signals.map((signal) => signal.reason).sort()).toEqual(["pending-aged", "scaleup_gap"]);
  expect(open(detector)).toEqual([
    { uid: "nodegroup:pool-a", reason: "scaleup_gap" },
    { uid: "p1", reason: "pending-aged" },
  ]);
  detector.observe("pods", "update", pod({ uid: "p1", node: "n1" }), T0 + 6 * MIN, false);
  detector.polled("autoscaler-status", group("NoActivity", 5), T0 + 6 * MIN);
  expect(open(detector)).toEqual([]);
});

test("token-burn: a burn is open while it holds; the session ending clears it", () => {
  const detector = new TokenBurnDetector(TOKEN_BURN_DEFAULTS);
  const totals: Record<string, number> = {};
  let now = T0;
  const step = (growth: Record<string, number>) => {
    now += MIN;
    for (const id of Object.keys(totals)) if (!(id in growth)) delete totals[id];
    for (const [id, grown] of Object.entries(growth)) totals[id] = (totals[id] ?? 0) + grown;
    const sessions = Object.entries(totals).map(([id, tokens]) => ({
      app: "spar",
      sessionID: id,
      usage: { overall: { input_tokens: tokens, output_tokens: 0 } },
    }));
    return detector.polled(TOKEN_BURN_POLL, { sessions }, now);
  };
  step({ a: 0, b: 1000, c: 1000 });
  step({ a: 4000, b: 1000, c: 1000 });
  expect(step({ a: 4000, b: 1000, c: 1000 })).toHaveLength(1);
  expect(open(detector)).toEqual([{ uid: "session:spar/a", reason: "token_burn" }]);
  step({ b: 1000, c: 1000 });
  expect(open(detector)).toEqual([]);
});
