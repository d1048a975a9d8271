/**
 * Builds a Model from a ModelSpec inside a turn worker. Scripts are read once per worker and
 * cached; the scripted cursor is supplied by the caller (it lives on the main thread).
 */
import type { Model, ModelSpec } from "../core/model.ts";
import { EchoModel } from "./echo-model.ts";
import { type ScriptedTurn, parseScript } from "./script-file.ts";
import { ScriptedModel } from "./scripted-model.ts";

const scripts = new Map<string, ScriptedTurn[]>();

export async function loadScript(path: string): Promise<ScriptedTurn[]> {
  const cached = scripts.get(path);
  if (cached) return cached;
  const parsed = parseScript(path, await Bun.file(path).text());
  if (!parsed.ok) throw new Error(parsed.error);
  scripts.set(path, parsed.value);
  return parsed.value;
}

export async function buildModel(spec: ModelSpec, nextScriptIndex: () => Promise<number>): Promise<Model> {
  switch (spec.provider) {
    case "echo":
      return new EchoModel();
    case "scripted": {
      if (!spec.scriptPath) throw new Error('model "scripted" requires --script (path to a recorded-turns JSONL)');
      const turns = await loadScript(spec.scriptPath);
      return new ScriptedModel({ turns, strict: spec.scriptStrict === true, nextIndex: nextScriptIndex });
    }
  }
}
