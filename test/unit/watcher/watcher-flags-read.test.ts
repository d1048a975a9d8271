/**
 * Every flag of `spar watcher watch` is read (issue 32 item 6; D436). A flag is read when the value
 * it sets reaches code that uses it, found in two steps:
 * 1. Observed: each flag is given a value other than its default and the configuration built from
 *    the command line is compared with the one built without it; the WatcherConfig fields that
 *    changed are the flag's fields. (No field changed: the flag is read by name from the values
 *    map, as the source-tuning flags are.)
 * 2. Static: a field is read when a module that takes the WatcherConfig (not the two that define
 *    and build it) reads `config.<field>` (`config.<group>.<field>` for a nested one; when a group
 *    is handed on whole, as `config.filter` is, the field's own name read as `.field` anywhere
 *    under src/watcher counts). A flag with no field is read by name when its quoted name ('' or
 *    "") appears in the code (comments left out) of src/ outside the flag table, the argument
 *    parser and the configuration builder. A flag with fields is read only through them: its name
 *    is often a common word (`region`), so a quoted name elsewhere proves nothing.
 * The unread set must equal UNREAD below, which the parts of issue 32 still being built shrink to
 * empty; a new flag that nothing reads, or a field whose last reader goes away, fails this test.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { watcherHelp } from "../../../src/cli/watcher-args.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { WATCHER_FLAGS } from "../../../src/cli/watcher-flags.ts";
import type { FlagSpec } from "../../../src/config/flag-spec.ts";
import { failureDomain } from "../../../src/watcher/watcher-config.ts";

/** Flags parsed and read by nothing: none (D436). A flag added without a reader fails the test. */
const UNREAD: string[] = [];

const ROOT = resolve(import.meta.dir, "..", "..", "..");
const BASE = ["--daemon-url=http://127.0.0.1:7777", "--token-env=WATCHER_TOKEN"];

/** A value other than the default, for the flags the mechanical rule cannot give one. */
const SAMPLES: Record<string, { base?: string[]; set: string[] }> = {
  "daemon-url": { set: ["--daemon-url=http://127.0.0.1:7778"] },
  mode: { set: ["--mode=shared", "--target-session=s1"] },
  "target-session": { base: ["--mode=shared", "--target-session=s1"], set: ["--mode=shared", "--target-session=s2"] },
  sink: { set: ["--sink=webhook", "--sink-url=http://127.0.0.1:9"] },
  "sink-url": {
    base: ["--sink=webhook", "--sink-url=http://127.0.0.1:9"],
    set: ["--sink=webhook", "--sink-url=http://127.0.0.1:10"],
  },
  "sink-token-env": {
    base: ["--sink=webhook", "--sink-url=http://127.0.0.1:9"],
    set: ["--sink=webhook", "--sink-url=http://127.0.0.1:9", "--sink-token-env=HOOK"],
  },
  sources: { set: ["--sources=cluster-events"] },
  severity: { set: ["--severity=cluster-event=info"] },
  "storm-mine-min": { set: ["--storm-mine-min=4"] },
  "metrics-addr": { set: ["--metrics-addr=:9090"] },
  "token-endpoint": { set: ["--token-endpoint=http://127.0.0.1:9"] },
  "expiry-warn": { set: ["--expiry-warn=100h"] },
  "notifications-addr": { set: ["--notifications-addr=:8091"] },
  "topology-cluster-defaults": { set: ["--topology-cluster-defaults=zone=2"] },
  // Both need the store they write into (D428).
  "distill-interval": { base: ["--store=/tmp/x.db"], set: ["--store=/tmp/x.db", "--distill-interval=7s"] },
  "graph-snapshot-interval": {
    base: ["--store=/tmp/x.db"],
    set: ["--store=/tmp/x.db", "--graph-snapshot-interval=7s"],
  },
};

function otherValue(flag: FlagSpec): string {
  if (flag.kind === "bool") return flag.defaultValue === "true" ? `--${flag.name}=false` : `--${flag.name}`;
  if (flag.choices) return `--${flag.name}=${flag.choices.find((choice) => choice !== flag.defaultValue)}`;
  if (flag.kind === "int") return `--${flag.name}=${Number(flag.defaultValue ?? 0) + 1}`;
  if (flag.kind === "float") return `--${flag.name}=${Number(flag.defaultValue ?? 0) + 0.01}`;
  if (flag.kind === "duration") return `--${flag.name}=7s`;
  return `--${flag.name}=x`;
}

/** Sets and maps as plain values; nested only one level below the root (a group's fields). */
function plain(value: unknown): unknown {
  if (value instanceof Set) return [...value].map(String).sort();
  if (value instanceof Map) return [...value].map(([key, item]) => [String(key), plain(item)]);
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, plain(item)]));
  return value;
}

function built(argv: string[]): Record<string, unknown> {
  const result = watcherConfigFromArgv([...BASE, ...argv]);
  if (!result.ok) throw new Error(`${argv.join(" ")}: ${result.error}`);
  const { values: _values, warnings: _warnings, ...fields } = result.value;
  return plain(fields) as Record<string, unknown>;
}

/** The WatcherConfig fields (`group.field` for nested ones) a flag's value changes. */
function fieldsOf(flag: FlagSpec): string[] {
  const sample = SAMPLES[flag.name];
  const before = built(sample?.base ?? []);
  const after = built(sample?.set ?? [otherValue(flag)]);
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  return Object.keys({ ...before, ...after }).flatMap((key) => {
    const [a, b] = [before[key], after[key]];
    if (same(a, b)) return [];
    const nested = a && b && typeof a === "object" && !Array.isArray(a) && !Array.isArray(b);
    if (!nested) return [key];
    const [groupA, groupB] = [a as Record<string, unknown>, b as Record<string, unknown>];
    return Object.keys({ ...groupA, ...groupB })
      .filter((field) => !same(groupA[field], groupB[field]))
      .map((field) => `${key}.${field}`);
  });
}

/** Code without its comments (block comments, and line comments that start a line). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
}

function sources(dir: string): Array<{ path: string; text: string }> {
  return readdirSync(join(ROOT, dir), { recursive: true })
    .map(String)
    .filter((file) => file.endsWith(".ts"))
    .map((file) => ({
      path: relative(ROOT, join(ROOT, dir, file)),
      text: code(readFileSync(join(ROOT, dir, file), "utf8")),
    }));
}

const SRC = sources("src");
const BUILDERS = ["src/cli/watcher-flags.ts", "src/cli/watcher-args.ts", "src/cli/watcher-config.ts"];
/** Modules that take the WatcherConfig (and not the ones that define or build it). */
const CONSUMERS = SRC.filter(
  (file) =>
    /WatcherConfig|watcher-config\.ts/.test(file.text) &&
    !BUILDERS.includes(file.path) &&
    file.path !== "src/watcher/watcher-config.ts",
);
const WATCHER = SRC.filter(
  (file) => file.path.startsWith("src/watcher/") && file.path !== "src/watcher/watcher-config.ts",
);
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

function fieldRead(path: string): boolean {
  const [group, field] = path.split(".");
  const via = String.raw`\bconfig(?:\.value)?\.`;
  if (field === undefined) return CONSUMERS.some((file) => new RegExp(`${via}${literal(path)}\\b`).test(file.text));
  if (CONSUMERS.some((file) => new RegExp(`${via}${literal(group ?? "")}\\.${literal(field)}\\b`).test(file.text)))
    return true;
  // The group handed on whole (`filter: config.filter`): its field read by name where it went.
  const whole = new RegExp(`${via}${literal(group ?? "")}\\b(?!\\.)`);
  return (
    CONSUMERS.some((file) => whole.test(file.text)) &&
    WATCHER.some((file) => new RegExp(`\\.${literal(field)}\\b`).test(file.text))
  );
}

function readByName(name: string): boolean {
  const quoted = new RegExp(`(?<!name: )(["'])${literal(name)}\\1`);
  return SRC.some((file) => !BUILDERS.includes(file.path) && quoted.test(file.text));
}

const FIELDS = new Map(WATCHER_FLAGS.map((flag) => [flag.name, fieldsOf(flag)]));

describe("every watcher flag is read (issue 32, D436)", () => {
  test("each flag's value changes the configuration, or the flag is read by name", () => {
    // A flag that changes nothing and is read by nobody by name is unread: it lands in the set below.
    expect(FIELDS.get("storm-cluster-fallback")).toEqual(["storm.clusterFallback"]);
    expect(FIELDS.get("enrich-cap")).toEqual(["enrich.capBytes"]);
    expect(FIELDS.get("namespace")).toEqual(["filter.allowNamespaces"]);
    expect(FIELDS.get("burn-eta")).toEqual([]);
  });

  test("the flags parsed and never read are exactly the ones issue 32's unfinished parts will read", () => {
    const unread = WATCHER_FLAGS.filter((flag) => {
      const fields = FIELDS.get(flag.name) ?? [];
      return fields.length > 0 ? !fields.some(fieldRead) : !readByName(flag.name);
    }).map((flag) => flag.name);
    expect(unread.sort()).toEqual(UNREAD);
  });

  test("the check can fail: a field nothing reads and a name nothing reads are both unread", () => {
    expect(fieldRead("storm.noSuchSetting")).toBe(false);
    expect(fieldRead("storm.windowMs")).toBe(true);
    expect(fieldRead("filter.allowNamespaces")).toBe(true);
    expect(fieldRead("noSuchField")).toBe(false);
    expect(readByName("burn-eta")).toBe(true);
    expect(readByName("no-such-flag")).toBe(false);
    // A name only a comment or a flag declaration mentions is not read.
    expect(readByName("region")).toBe(false);
  });

  test("--region is the failure domain when --zone is not given (D436): the payloads' zone and the fingerprint's", () => {
    expect(failureDomain("", "us-east1")).toBe("us-east1");
    expect(failureDomain("us-east1-b", "us-east1")).toBe("us-east1-b");
    expect(failureDomain("", undefined)).toBe("");
  });

  test("--help marks no flag inert, and docs/watcher.md's flag table claims nothing for an unread flag", () => {
    const help = watcherHelp();
    expect(help).not.toMatch(/\binert\b|not (yet )?(implemented|read|used)|no effect|reserved|ignored/i);
    const rows = readFileSync(join(ROOT, "docs", "watcher.md"), "utf8")
      .split("\n")
      .filter((line) => line.startsWith("|"));
    for (const name of UNREAD) expect(rows.filter((row) => row.includes(`--${name}`))).toEqual([]);
  });
});
