/**
 * The cluster-autoscaler status parser (D395) on both shapes: the YAML document of newer releases
 * and the older plain text (with and without `Name:` lines), Go and RFC 3339 times, backoff
 * errors, and what it refuses (empty text, text that is neither).
 */
import { describe, expect, test } from "bun:test";
import { parseAutoscalerStatus, statusTime, wantsNodes } from "../../../src/watcher/core/sources/capacity-status.ts";
import { textStatus, yamlStatus } from "./capacity-objects.ts";
import { MIN, T0 } from "./workload-objects.ts";

const yaml = (text: string) => Bun.YAML.parse(text);

describe("the YAML shape", () => {
  test("each node group's scale-up status, transition, counts and backoff error", () => {
    const status = parseAutoscalerStatus(
      yamlStatus([
        { name: "pool-a", scaleUp: "InProgress", since: T0, ready: 3, target: 5 },
        {
          name: "pool-b",
          scaleUp: "Backoff",
          since: T0 + MIN,
          ready: 0,
          target: 2,
          errorCode: "QUOTA_EXCEEDED",
          errorMessage: "Quota 'CPUS' exceeded. Limit: 24.0 in region europe-west1.",
        },
        { name: "pool-c", scaleUp: "NoActivity", since: T0 },
      ]),
      yaml,
    );
    expect(status).toEqual({
      format: "yaml",
      clusterScaleUp: "InProgress",
      groups: [
        { name: "pool-a", scaleUp: "InProgress", scaleUpSince: T0, ready: 3, target: 5 },
        {
          name: "pool-b",
          scaleUp: "Backoff",
          scaleUpSince: T0 + MIN,
          ready: 0,
          target: 2,
          backoffError: "QUOTA_EXCEEDED: Quota 'CPUS' exceeded. Limit: 24.0 in region europe-west1.",
        },
        { name: "pool-c", scaleUp: "NoActivity", scaleUpSince: T0, ready: 0, target: 0 },
      ],
    });
    expect(status?.groups.map(wantsNodes)).toEqual([true, true, false]);
  });

  test("tolerant: missing sections, unknown keys and a group without a name", () => {
    const status = parseAutoscalerStatus(
      "autoscalerStatus: Initializing\nextra: {a: 1}\nnodeGroups:\n- scaleUp: {status: NeedsScaleUp}\n  future: true\n",
      yaml,
    );
    expect(status).toEqual({
      format: "yaml",
      clusterScaleUp: "",
      groups: [{ name: "nodegroup-1", scaleUp: "NeedsScaleUp" }],
    });
  });
});

describe("the plain-text shape", () => {
  test("named groups: the ScaleUp line, its LastTransitionTime in Go's format, counts from the detail", () => {
    const status = parseAutoscalerStatus(
      textStatus([
        {
          name: "https://www.googleapis.com/compute/v1/projects/p/zones/z/instanceGroups/pool-a",
          scaleUp: "InProgress",
          since: T0,
          ready: 3,
          target: 4,
        },
        { name: "pool-b", scaleUp: "NoActivity", since: T0 + MIN, ready: 2, target: 2 },
      ]),
      yaml,
    );
    expect(status).toEqual({
      format: "text",
      clusterScaleUp: "NoActivity",
      groups: [
        {
          name: "https://www.googleapis.com/compute/v1/projects/p/zones/z/instanceGroups/pool-a",
          scaleUp: "InProgress",
          scaleUpSince: T0,
          ready: 3,
          target: 4,
        },
        { name: "pool-b", scaleUp: "NoActivity", scaleUpSince: T0 + MIN, ready: 2, target: 2 },
      ],
    });
  });

  test("groups without Name lines are numbered in order; a Backoff line with an error code carries it", () => {
    const text = textStatus(
      [
        { name: "x", scaleUp: "Backoff", since: T0, ready: 0, target: 1 },
        { name: "y", scaleUp: "InProgress", since: T0, ready: 1, target: 2 },
      ],
      false,
    ).replace(
      "Backoff (ready=0 cloudProviderTarget=1)",
      'Backoff (ready=0 cloudProviderTarget=1 errorCode=OUT_OF_RESOURCES errorMessage="zone exhausted")',
    );
    const status = parseAutoscalerStatus(text, yaml);
    expect(status?.groups).toEqual([
      {
        name: "nodegroup-1",
        scaleUp: "Backoff",
        scaleUpSince: T0,
        ready: 0,
        target: 1,
        backoffError: "OUT_OF_RESOURCES: zone exhausted",
      },
      { name: "nodegroup-2", scaleUp: "InProgress", scaleUpSince: T0, ready: 1, target: 2 },
    ]);
  });

  test("a cluster-wide section alone parses; empty text and prose do not", () => {
    const clusterOnly = textStatus([]).split("NodeGroups:")[0] ?? "";
    expect(parseAutoscalerStatus(clusterOnly, yaml)).toEqual({
      format: "text",
      clusterScaleUp: "NoActivity",
      groups: [],
    });
    expect(parseAutoscalerStatus("", yaml)).toBeUndefined();
    expect(parseAutoscalerStatus("the autoscaler is thinking", yaml)).toBeUndefined();
  });

  test("text that looks like YAML but is not falls back to the text reader", () => {
    const status = parseAutoscalerStatus(
      `time: broken: [\n${textStatus([{ name: "p", scaleUp: "InProgress", since: T0, ready: 1, target: 2 }])}`,
      yaml,
    );
    expect(status?.format).toBe("text");
    expect(status?.groups.map((group) => group.name)).toEqual(["p"]);
  });
});

test("times: RFC 3339, Go's time.String with nanoseconds and an offset, the zero time and junk", () => {
  expect(statusTime("2026-07-01T12:00:00Z")).toBe(T0);
  expect(statusTime("2026-07-01 12:00:00.123456789 +0000 UTC")).toBe(T0 + 123);
  expect(statusTime("2026-07-01 14:00:00 +0200 CEST")).toBe(T0);
  expect(statusTime("0001-01-01 00:00:00 +0000 UTC")).toBeUndefined();
  expect(statusTime("yesterday")).toBeUndefined();
  expect(statusTime(undefined)).toBeUndefined();
});
