/**
 * The one setting reader (src/config/setting-reader.ts) and the declarations it reads: where a
 * value comes from, the declared default and bounds, and the errors that name the flag or key.
 * Every table of the agent and the watcher is checked against its own declaration.
 */
import { describe, expect, test } from "bun:test";
import { AGENT_FLAGS } from "../../../src/cli/agent-flags.ts";
import { WATCHER_FLAGS } from "../../../src/cli/watcher-flags.ts";
import { TrackedConfig } from "../../../src/config/config-file.ts";
import type { FlagSpec, FlagValue } from "../../../src/config/flag-spec.ts";
import { SettingReader, declaredValue } from "../../../src/config/setting-reader.ts";

const TABLE: readonly FlagSpec[] = [
  { name: "steps", kind: "int", help: "", configKey: "agent.steps", defaultValue: "25", bounds: { min: 1, max: 100 } },
  { name: "beat", kind: "duration", help: "", configKey: "agent.beat", defaultValue: "15s", bounds: { min: 100 } },
  { name: "level", kind: "string", help: "", configKey: "log.level", defaultValue: "info", choices: ["info", "warn"] },
  { name: "open", kind: "bool", help: "", configKey: "agent.open", defaultValue: "false" },
  { name: "ratio", kind: "float", help: "", defaultValue: "0.5", bounds: { above: 0, below: 1 } },
  { name: "free", kind: "int", help: "" },
];

function reader(flags: Record<string, FlagValue> = {}, config: Record<string, unknown> = {}): SettingReader {
  return new SettingReader(TABLE, new Map(Object.entries(flags)), new Map(Object.entries(config)));
}

describe("where a setting comes from", () => {
  test("the flag wins over the config key, the key over the declared default", () => {
    expect(reader({ steps: 3 }, { "agent.steps": 4 }).int("steps")).toEqual({ ok: true, value: 3 });
    expect(reader({}, { "agent.steps": 4 }).int("steps")).toEqual({ ok: true, value: 4 });
    expect(reader().int("steps")).toEqual({ ok: true, value: 25 });
    expect(reader().duration("beat")).toEqual({ ok: true, value: 15_000 });
    expect(reader().oneOf("level")).toEqual({ ok: true, value: "info" });
    expect(reader().bool("open")).toEqual({ ok: true, value: false });
  });

  test("a default computed at startup wins over the declared one", () => {
    expect(reader().int("steps", 7)).toEqual({ ok: true, value: 7 });
  });

  test("the config key is asked for even when the flag wins, so it never reads as unknown", () => {
    const config = new TrackedConfig([["agent.steps", 4]]);
    new SettingReader(TABLE, new Map([["steps", 3]]), config).int("steps");
    expect(config.unread()).toEqual([]);
  });
});

describe("errors name the flag or key as it was set", () => {
  test("bounds and types from the declaration", () => {
    expect(reader({ steps: 0 }).int("steps")).toEqual({ ok: false, error: "--steps must be an integer from 1 to 100" });
    expect(reader({}, { "agent.steps": "3" }).int("steps")).toEqual({
      ok: false,
      error: "config key agent.steps must be an integer from 1 to 100",
    });
    expect(reader({ beat: 5 }).duration("beat")).toEqual({ ok: false, error: "--beat must be at least 100ms" });
    expect(reader({ level: "loud" }).oneOf("level")).toEqual({ ok: false, error: "--level must be one of info, warn" });
    expect(reader({}, { "agent.open": "yes" }).bool("open")).toEqual({
      ok: false,
      error: "config key agent.open must be true or false",
    });
  });

  test("a bare number in the config file is not a duration", () => {
    expect(reader({}, { "agent.beat": 15 }).duration("beat")).toEqual({
      ok: false,
      error:
        'config key agent.beat: not a duration: write it in Go notation such as "30s", "5m" or "1h30m0s" (a bare number has no unit)',
    });
  });

  test("a command-line-only table reads its declaration: out of range names the flag and the value", () => {
    expect(reader({ ratio: "1" }).declared("ratio")).toEqual({
      ok: false,
      error: "--ratio=1 is out of range: must be above 0 and below 1",
    });
    expect(reader().declared("ratio")).toEqual({ ok: true, value: 0.5 });
    expect(reader().declared("free")).toEqual({ ok: true, value: undefined });
  });

  test("an int read of a setting that declares no min and max is a programming error, not a pass", () => {
    expect(() => reader().int("free")).toThrow("declares no min and max");
  });
});

describe("the flag tables", () => {
  test("every declared default of the agent and the watcher converts under its own kind, bounds and choices", () => {
    const declared = [...AGENT_FLAGS, ...WATCHER_FLAGS].filter((spec) => spec.defaultValue !== undefined);
    expect(declared.length).toBeGreaterThan(60);
    for (const spec of declared)
      expect([spec.name, declaredValue(spec, spec.defaultValue ?? "").ok]).toEqual([spec.name, true]);
  });

  test("every integer setting of the agent declares its bounds (the reader checks them)", () => {
    const unbounded = AGENT_FLAGS.filter(
      (spec) => spec.kind === "int" && (spec.bounds?.min === undefined || spec.bounds.max === undefined),
    ).map((spec) => spec.name);
    expect(unbounded).toEqual([]);
  });

  test("no two settings share a name or a config key", () => {
    const names = AGENT_FLAGS.map((spec) => spec.name);
    const keys = AGENT_FLAGS.flatMap((spec) => (spec.configKey === undefined ? [] : [spec.configKey]));
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
