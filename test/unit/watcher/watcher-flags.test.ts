/**
 * The flag surface of `spar watcher watch`: the frozen core flags (names, types, defaults), every
 * default valid under its own bounds, Go-notation durations, bounds, and every startup refusal of
 * the spec that needs no cluster access (the grant-dependent ones: access-plan.test.ts).
 */
import { describe, expect, test } from "bun:test";
import { parseWatcherArgs, watcherHelp } from "../../../src/cli/watcher-args.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { WATCHER_FLAGS } from "../../../src/cli/watcher-flags.ts";

const BASE = ["--daemon-url=http://127.0.0.1:7777", "--token-env=WATCHER_TOKEN"];

function config(...extra: string[]) {
  const built = watcherConfigFromArgv([...BASE, ...extra]);
  if (!built.ok) throw new Error(built.error);
  return built.value;
}

function refusal(...argv: string[]): string {
  const built = watcherConfigFromArgv(argv);
  if (built.ok) throw new Error(`expected a refusal for ${argv.join(" ")}`);
  return built.error;
}

describe("the frozen core flag surface", () => {
  test("names, types and defaults of the core flags are pinned", () => {
    const core = WATCHER_FLAGS.filter((flag) => flag.core).map(
      (flag) => `${flag.name}:${flag.kind}:${flag.defaultValue ?? ""}`,
    );
    expect(core).toEqual([
      "daemon-url:string:",
      "token-env:string:",
      "owner:string:",
      "mode:string:per-incident",
      "target-session:string:",
      "sink:string:daemon",
      "sink-url:string:",
      "sink-token-env:string:",
      "dry-run:bool:false",
      "cluster-name:string:",
      "in-cluster:bool:",
      "kubeconfig:string:",
      "namespace:string:",
      "exclude-namespace:string:",
      "reason:string:",
      "sources:string:auto",
      "severity:repeatable:",
      "dedup-window:duration:5m0s",
      "dedup-persist:string:",
      "snapshot-interval:duration:30s",
      "backoff-min-count:int:3",
      "imagepull-transient-min-count:int:3",
      "unhealthy-min-count:int:3",
      "access-recheck:duration:2m0s",
      "recovery-stable-for:duration:5m0s",
      "triage-regress-factor:int:3",
      "enrich:string:critical",
      "enrich-cap:int:4096",
      "enrich-lists:string:all",
      "enrich-lists-preflight:bool:false",
      "enrich-log-lines:int:200",
      "enrich-timeout:duration:5s",
      "inject-max-bytes:int:8192",
      "storm:string:auto",
      "storm-min:int:3",
      "storm-window:duration:1m0s",
      "storm-cluster-fallback:bool:true",
      "storm-mine:bool:false",
      "storm-mine-min:int:0",
      "store:string:",
      "store-max-mb:int:512",
      "store-ttl:duration:720h0m0s",
      "metrics-addr:string:",
      "log-level:string:info",
    ]);
  });

  test("the whole table of the spec is there, each flag once", () => {
    const names = WATCHER_FLAGS.map((flag) => flag.name);
    expect(new Set(names).size).toBe(names.length);
    // The spec's 99, plus spar's own --metrics-allowed-hosts (D191), --otel-endpoint (issue 18) and
    // the notifications receiver's --notifications-addr and --notifications-token-env (D402).
    expect(names.length).toBe(103);
    for (const name of [
      "storm-cluster-fallback",
      "topology-tier-c-signals",
      "compute-class-rank0-floor",
      "notifications-subscription",
      "notifications-addr",
      "notifications-token-env",
      "quota-window",
      "burn-multiple",
      "graph-snapshot-interval",
    ]) {
      expect(names).toContain(name);
    }
  });

  test("every default parses under its own bounds", () => {
    const parsed = parseWatcherArgs([]);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    for (const flag of WATCHER_FLAGS.filter((candidate) => candidate.defaultValue !== undefined))
      expect(parsed.value.values.has(flag.name)).toBe(true);
  });

  test("--help lists every flag with its default", () => {
    const help = watcherHelp();
    for (const flag of WATCHER_FLAGS) expect(help).toContain(`--${flag.name}`);
    expect(help).toContain("default 5m0s");
    expect(help).toContain("default 720h0m0s");
  });
});

describe("values", () => {
  test("defaults", () => {
    const value = config();
    expect(value.dedupWindowMs).toBe(300_000);
    expect(value.snapshotIntervalMs).toBe(30_000);
    expect(value.injectMaxBytes).toBe(8192);
    expect(value.enrich).toMatchObject({
      level: "critical",
      capBytes: 4096,
      logLines: 200,
      timeoutMs: 5000,
      lists: { all: true, include: [], exclude: [] },
    });
    expect(value.storm).toEqual({
      setting: "auto",
      min: 3,
      windowMs: 60_000,
      clusterFallback: true,
      mine: false,
      mineMin: 0,
    });
    expect(value.sources.auto).toBe(true);
    expect(value.sources.names).not.toContain("quota");
    expect([...value.filter.reasons]).toContain("CrashLoopBackOff");
    expect(value.filter.reasons.size).toBe(11);
    expect(value.values.get("store-ttl")).toBe(720 * 3_600_000);
    expect(value.inCluster).toBeUndefined();
  });

  test("durations in Go notation, both --flag=v and --flag v", () => {
    expect(config("--dedup-window=1h30m0s").dedupWindowMs).toBe(5_400_000);
    expect(config("--dedup-window", "90s").dedupWindowMs).toBe(90_000);
    expect(config("--snapshot-interval=0").snapshotIntervalMs).toBe(0);
    expect(refusal(...BASE, "--dedup-window=5 minutes")).toContain("Go notation");
  });

  test("lists, severity overrides, storm aliases, enrich-lists subtractions", () => {
    const value = config(
      "--namespace=shop, web",
      "--exclude-namespace=kube-system",
      "--reason=BackOff",
      "--severity=cluster-event=warning,storm=critical",
      "--severity",
      "rollout.stall=info",
      "--storm=false",
      "--enrich-lists=all,-secrets",
    );
    expect([...value.filter.allowNamespaces]).toEqual(["shop", "web"]);
    expect([...value.filter.excludeNamespaces]).toEqual(["kube-system"]);
    expect([...value.filter.reasons]).toEqual(["BackOff"]);
    expect([...value.severityOverrides]).toEqual([
      ["cluster-event", "warning"],
      ["storm", "critical"],
      ["rollout.stall", "info"],
    ]);
    expect(value.storm.setting).toBe("off");
    expect(value.enrich.lists).toEqual({ all: true, include: [], exclude: ["secrets"] });
    expect(config("--storm=true").storm.setting).toBe("on");
  });

  test("--dry-run needs neither --daemon-url nor --token-env", () => {
    const built = watcherConfigFromArgv(["--dry-run"]);
    expect(built.ok).toBe(true);
  });
});

describe("startup refusals", () => {
  const cases: Array<[string, string[], string]> = [
    ["missing --daemon-url", ["--token-env=T"], "--daemon-url is required"],
    ["missing --token-env", ["--daemon-url=http://d:1"], "--token-env is required"],
    ["--mode=shared without --target-session", [...BASE, "--mode=shared"], "--mode=shared requires --target-session"],
    ["--sink=webhook without --sink-url", ["--sink=webhook"], "--sink=webhook requires --sink-url"],
    [
      "--sink-token-env without webhook",
      [...BASE, "--sink-token-env=HOOK"],
      "--sink-token-env is only valid with --sink=webhook",
    ],
    ["--sink-url without webhook", [...BASE, "--sink-url=http://hook"], "--sink-url is only valid with --sink=webhook"],
    [
      "--storm-mine with storm off",
      [...BASE, "--storm=off", "--storm-mine"],
      "--storm-mine needs storm correlation on",
    ],
    [
      "--storm-cluster-fallback with storm off",
      [...BASE, "--storm=off", "--storm-cluster-fallback"],
      "--storm-cluster-fallback needs storm correlation on",
    ],
    [
      "--clusters with --clusters-from",
      [...BASE, "--clusters=a=https://a", "--clusters-from=kubeconfig"],
      "mutually exclusive",
    ],
    [
      "webhook with shared mode",
      ["--sink=webhook", "--sink-url=https://h", "--mode=shared", "--target-session=s"],
      "only --mode=per-incident",
    ],
    ["webhook with --owner", ["--sink=webhook", "--sink-url=https://h", "--owner=x"], "--owner is not valid"],
    ["trailing slash", ["--daemon-url=http://d:1/", "--token-env=T"], 'must not end in "/"'],
    ["not a URL", ["--daemon-url=d:1", "--token-env=T"], "http:// or https://"],
    ["bare --storm", [...BASE, "--storm"], "--storm needs a value"],
    ["bare --storm before another flag", [...BASE, "--storm", "--dry-run"], "--storm must be one of"],
    ["unknown --storm value", [...BASE, "--storm=maybe"], "--storm must be one of"],
    ["unknown source", [...BASE, "--sources=cluster-events,pods"], 'unknown source "pods"'],
    ["auto with others", [...BASE, "--sources=auto,quota"], "--sources=auto must be the only value"],
    ["notifications without subscription", [...BASE, "--sources=notifications"], "--notifications-subscription"],
    ["severity level", [...BASE, "--severity=storm=loud"], "level must be critical, warning or info"],
    [
      "severity kind twice",
      [...BASE, "--severity=storm=info", "--severity=storm=warning"],
      "names storm more than once",
    ],
    ["unknown flag", [...BASE, "--stormy"], "unknown flag --stormy"],
    ["enrich-lists include after all", [...BASE, "--enrich-lists=all,secrets"], "only subtractions"],
    ["metrics-addr", [...BASE, "--metrics-addr=nine"], "--metrics-addr must be host:port"],
    ["topology defaults", [...BASE, "--topology-cluster-defaults=zone=x"], "--topology-cluster-defaults"],
  ];
  for (const [name, argv, message] of cases) {
    test(name, () => {
      expect(refusal(...argv)).toContain(message);
    });
  }

  const outOfRange: Array<[string, string]> = [
    ["--storm-min=1", "at least 2"],
    ["--triage-regress-factor=1", "at least 2 (or 0)"],
    ["--enrich-log-lines=0", "at least 1"],
    ["--enrich-timeout=0s", "above 0"],
    ["--watchboard-batch=0", "at least 1"],
    ["--watchboard-flush=0", "above 0"],
    ["--watchboard-rotate=0", "at least 1"],
    ["--store-max-mb=0", "at least 1"],
    ["--store-ttl=0", "above 0"],
    ["--graph-snapshot-interval=0", "above 0"],
    ["--burn-eta=0", "above 0"],
    ["--burn-multiple=1", "above 1"],
    ["--token-budget-usd=-1", "at least 0"],
    ["--token-poll=0", "above 0"],
    ["--capacity-poll=0", "above 0"],
    ["--pending-age=0", "above 0"],
    ["--degradation-drop=0", "above 0"],
    ["--degradation-drop=1.5", "at most 1"],
    ["--degradation-window=0", "above 0"],
    ["--expiry-interval=0", "above 0"],
    ["--expiry-warn=48h", "at least 72h0m0s"],
    ["--gateway-grace=0", "above 0"],
    ["--quota-poll=0", "above 0"],
    ["--quota-warn=1", "below 1"],
    ["--quota-window=0", "above 0"],
    ["--compute-class-dwell=0", "above 0"],
    ["--compute-class-window=0", "above 0"],
    ["--topology-baseline-band=0", "above 0"],
    ["--topology-baseline-half-life=0", "above 0"],
    ["--topology-capacity-ratio=0", "above 0"],
    ["--backoff-min-count=0", "at least 1"],
    ["--inject-max-bytes=0", "at least 1"],
  ];
  for (const [flag, message] of outOfRange) {
    test(`out of range: ${flag}`, () => {
      const text = refusal(...BASE, flag);
      expect(text).toContain("out of range");
      expect(text).toContain(message);
    });
  }

  test("an explicit --storm-mine-min must be at least --storm-min; 0 is auto", () => {
    expect(refusal(...BASE, "--storm-min=4", "--storm-mine-min=3")).toContain("at least --storm-min (4)");
    expect(config("--storm-min=4", "--storm-mine-min=0").storm.mineMin).toBe(0);
    expect(config("--storm-min=4", "--storm-mine-min=6").storm.mineMin).toBe(6);
  });

  test("a bad value of a disabled source's flag is still refused", () => {
    expect(refusal(...BASE, "--sources=cluster-events", "--quota-warn=2")).toContain("--quota-warn");
  });

  test("plain http for the webhook is accepted with a warning", () => {
    const built = watcherConfigFromArgv(["--sink=webhook", "--sink-url=http://hook.local"]);
    expect(built.ok && built.value.warnings[0]).toContain("plain http");
  });
});
