/**
 * Grant-dependent startup refusals (access plan), Event → Signal conversion, and the purity of
 * src/watcher/core: it imports only itself (no packages, node:*, bun:*) and does no I/O.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import {
  type AccessAnswer,
  type AccessCheck,
  accessChecksFor,
  optionalAccess,
  optionalWatches,
  planAccess,
} from "../../../src/watcher/core/access-plan.ts";
import { AccessRecheck } from "../../../src/watcher/core/access-recheck.ts";
import { eventToSignal } from "../../../src/watcher/core/event-signal.ts";

/** Comments out, then every module specifier (static, side-effect, dynamic imports and re-exports). */
function stripComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, " ").replace(/(^|[\s;{}])\/\/.*$/gm, "$1");
}
function importSpecifiers(source: string): string[] {
  const code = stripComments(source);
  return [...code.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g)].map((match) => match[1] ?? "");
}

const allowAll = (): AccessAnswer => ({ allowed: true });
const deny =
  (resource: string) =>
  (check: AccessCheck): AccessAnswer =>
    check.resource === resource ? { allowed: false, reason: "no RBAC policy matched" } : { allowed: true };

describe("access plan", () => {
  test("auto with every grant: cluster-events on, storm on, the unbuilt sources named together on one line", () => {
    const plan = planAccess(
      {
        // Names no build has: the sources still unbuilt change as they land.
        sources: { auto: true, names: ["cluster-events", "rollout", "future-one", "future-two"] },
        storm: "auto",
      },
      allowAll,
    );
    expect(plan).toMatchObject({ sources: ["cluster-events", "rollout"], storm: true });
    expect(plan.refusal).toBeUndefined();
    const unbuilt = plan.notes.filter((note) => note.includes("not available in this build"));
    expect(unbuilt).toEqual(["sources not available in this build, off: future-one, future-two"]);
  });

  test("a failed cluster-events probe under auto is fatal", () => {
    expect(
      planAccess({ sources: { auto: true, names: ["cluster-events"] }, storm: "off" }, deny("events")).refusal,
    ).toContain("misdeployed");
  });

  test("an explicit list makes a named source's missing grant fatal", () => {
    const refusal = planAccess(
      { sources: { auto: false, names: ["cluster-events"] }, storm: "off" },
      deny("events"),
    ).refusal;
    expect(refusal).toContain('source "cluster-events" requires permission to "list events cluster-wide"');
    expect(refusal).toContain("no RBAC policy matched");
    expect(planAccess({ sources: { auto: false, names: ["future-one"] }, storm: "off" }, allowAll).refusal).toContain(
      "not available in this build",
    );
  });

  test("--storm=on with a missing grant is fatal; auto degrades to off", () => {
    expect(
      planAccess({ sources: { auto: false, names: ["cluster-events"] }, storm: "on" }, deny("replicasets")).refusal,
    ).toContain('--storm=on requires permission to "list replicasets.apps cluster-wide"');
    const auto = planAccess({ sources: { auto: false, names: ["cluster-events"] }, storm: "auto" }, deny("nodes"));
    expect(auto).toMatchObject({ storm: false, sources: ["cluster-events"] });
    expect(auto.refusal).toBeUndefined();
  });

  test("an access review that errors is fatal", () => {
    expect(
      planAccess({ sources: { auto: true, names: ["cluster-events"] }, storm: "off" }, () => ({
        error: "connection refused",
      })).refusal,
    ).toContain("connection refused");
  });

  test("recovery needs list and watch on pods only: without watch it is DISABLED with one note naming the grant, and nothing else watches pods", () => {
    const input = { sources: { auto: false, names: ["cluster-events"] }, storm: "off" as const, recovery: true };
    expect(accessChecksFor(input).map((check) => `${check.verb} ${check.resource}`)).toEqual([
      "list events",
      "watch events",
      "list pods",
      "watch pods",
    ]);
    const noWatch = planAccess(input, (check) =>
      check.resource === "pods" && check.verb === "watch"
        ? { allowed: false, reason: "no RBAC policy matched" }
        : { allowed: true },
    );
    expect(noWatch).toMatchObject({ recovery: false, storm: false, sources: ["cluster-events"] });
    expect(noWatch.refusal).toBeUndefined();
    expect(noWatch.notes.filter((note) => note.startsWith("recovery:"))).toEqual([
      'recovery: DISABLED (missing "watch pods cluster-wide" (no RBAC policy matched) — resolved and resolved.reverted will not be sent; grant list and watch on pods to turn it on)',
    ]);
    expect(optionalWatches(noWatch)).toEqual({ pods: false, replicaSets: false, nodes: false });
    expect(optionalAccess(noWatch)).toEqual([]);
    // A role without replicasets: storms off by auto, recovery on; it watches and re-checks pods only.
    const withoutReplicaSets = planAccess({ ...input, storm: "auto" }, deny("replicasets"));
    expect(withoutReplicaSets).toMatchObject({ recovery: true, storm: false });
    expect(optionalWatches(withoutReplicaSets)).toEqual({ pods: true, replicaSets: false, nodes: false });
    // Node clearance (D377) rides on a nodes grant a running part already holds: object-state's.
    expect(optionalWatches({ ...withoutReplicaSets, sources: ["cluster-events", "object-state"] })).toEqual({
      pods: true,
      replicaSets: false,
      nodes: true,
    });
    expect(optionalAccess(withoutReplicaSets).map((check) => `${check.verb} ${check.resource}`)).toEqual([
      "list pods",
      "watch pods",
    ]);
    const errored = planAccess(input, (check) =>
      check.resource === "pods" ? { error: "connection reset" } : { allowed: true },
    );
    expect(errored).toMatchObject({ unreachable: true });
    expect(errored.refusal).toContain("recovery tracking failed: connection reset");
  });

  test("the checks asked for: events, plus pods, nodes and replicasets unless storm is off", () => {
    expect(
      accessChecksFor({ sources: { auto: false, names: ["cluster-events"] }, storm: "off" }).map(
        (check) => `${check.verb} ${check.resource}`,
      ),
    ).toEqual(["list events", "watch events"]);
    expect(accessChecksFor({ sources: { auto: false, names: ["cluster-events"] }, storm: "auto" })).toHaveLength(8);
  });
});

describe("Event → Signal", () => {
  test("identity, times, counts, node and labels", () => {
    const signal = eventToSignal({
      metadata: {
        name: "web-1.17",
        namespace: "shop",
        labels: { team: "shop" },
        creationTimestamp: "2026-07-24T09:00:00Z",
      },
      involvedObject: { kind: "Pod", namespace: "shop", name: "web-1", uid: "u1", fieldPath: "spec.containers{app}" },
      reason: "BackOff",
      message: "Back-off restarting failed container",
      count: 4,
      firstTimestamp: "2026-07-24T10:00:00Z",
      lastTimestamp: "2026-07-24T10:05:00Z",
      type: "Warning",
      source: { component: "kubelet", host: "node-1" },
    });
    expect(signal).toEqual({
      kind: "cluster-event",
      reason: "BackOff",
      namespace: "shop",
      kindOfObject: "Pod",
      name: "web-1",
      container: "spec.containers{app}",
      uid: "u1",
      message: "Back-off restarting failed container",
      eventCount: 4,
      firstSeen: Date.parse("2026-07-24T10:00:00Z"),
      lastSeen: Date.parse("2026-07-24T10:05:00Z"),
      type: "Warning",
      severity: "critical",
      node: "node-1",
      labels: { team: "shop" },
    });
  });

  test("eventTime and series instead of timestamps; unusable objects", () => {
    const signal = eventToSignal({
      involvedObject: { uid: "u", kind: "Node", name: "n" },
      reason: "NodeNotReady",
      eventTime: "2026-07-24T10:00:00.000000Z",
      series: { count: 9, lastObservedTime: "2026-07-24T10:09:00Z" },
      reportingInstance: "n",
    });
    expect(signal).toMatchObject({
      eventCount: 9,
      firstSeen: Date.parse("2026-07-24T10:00:00Z"),
      lastSeen: Date.parse("2026-07-24T10:09:00Z"),
      node: "n",
      namespace: "",
    });
    expect(eventToSignal({ reason: "X" })).toBeUndefined();
    expect(eventToSignal("nope")).toBeUndefined();
  });
});

test("src/watcher/core is pure: imports only itself, no fetch, no Bun, no process", () => {
  const root = resolve(import.meta.dir, "../../..");
  const files = [...new Bun.Glob("src/watcher/core/**/*.ts").scanSync({ cwd: root })];
  expect(files.length).toBeGreaterThan(10);
  const violations: string[] = [];
  const core = join(root, "src/watcher/core");
  for (const file of files) {
    const source = readFileSync(join(root, file), "utf8");
    // Relative imports that stay inside src/watcher/core (its sources/ folder may import ../, D379).
    for (const specifier of importSpecifiers(source)) {
      const target = resolve(dirname(join(root, file)), specifier);
      if (!specifier.startsWith(".") || !target.startsWith(`${core}/`)) violations.push(`${file} imports ${specifier}`);
    }
    stripComments(source)
      .split("\n")
      .forEach((line, index) => {
        if (/\bfetch\s*\(|\bBun\.|\bprocess\.|\bsetTimeout\(|\bsetInterval\(|\bDate\.now\(/.test(line))
          violations.push(`${file}:${index + 1}: ${line.trim()}`);
      });
  }
  expect(violations).toEqual([]);
});

describe("access re-check", () => {
  const events: AccessCheck = { verb: "watch", group: "", resource: "events" };
  const nodes: AccessCheck = { verb: "list", group: "", resource: "nodes" };
  const answers =
    (denied: AccessCheck[], errored: AccessCheck[] = []) =>
    (check: AccessCheck): AccessAnswer =>
      errored.includes(check)
        ? { error: "HTTP 503" }
        : denied.includes(check)
          ? { allowed: false, reason: "RBAC: no rule" }
          : { allowed: true };

  test("a denial must repeat over two consecutive sweeps; an allowed sweep between resets it; an error neither counts nor resets", () => {
    const recheck = new AccessRecheck([events], [nodes]);
    expect(recheck.sweep(answers([events])).revoked).toEqual([]);
    expect(recheck.sweep(answers([])).revoked).toEqual([]);
    expect(recheck.sweep(answers([events])).revoked).toEqual([]);
    expect(recheck.sweep(answers([], [events])).revoked).toEqual([]);
    const verdict = recheck.sweep(answers([events]));
    expect(verdict.revoked).toEqual([
      { check: events, description: "watch events cluster-wide", required: true, reason: "RBAC: no rule" },
    ]);
    expect(verdict.stop).toBe(true);
    expect(recheck.sweep(answers([events])).revoked).toEqual([]);
  });

  test("a permission not held at startup is never tracked, so never reported revoked however often it is denied", () => {
    const replicaSets: AccessCheck = { verb: "list", group: "apps", resource: "replicasets" };
    const recheck = new AccessRecheck([events], [nodes, replicaSets], (check) => check !== replicaSets);
    expect(recheck.checks()).toEqual([nodes, events]);
    for (let sweep = 0; sweep < 5; sweep++) expect(recheck.sweep(answers([replicaSets])).revoked).toEqual([]);
    recheck.sweep(answers([nodes]));
    expect(recheck.sweep(answers([nodes])).revoked.map((revocation) => revocation.description)).toEqual([
      "list nodes cluster-wide",
    ]);
  });

  test("an optional permission degrades without stopping, and is restored when granted again", () => {
    const recheck = new AccessRecheck([events], [nodes]);
    recheck.sweep(answers([nodes]));
    const verdict = recheck.sweep(answers([nodes]));
    expect(verdict.revoked.map((revocation) => [revocation.description, revocation.required])).toEqual([
      ["list nodes cluster-wide", false],
    ]);
    expect(verdict.stop).toBe(false);
    expect(recheck.sweep(answers([])).restored).toEqual([nodes]);
  });
});
