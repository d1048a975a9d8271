/**
 * Builds a Model from a ModelSpec inside a turn worker. Scripts are read once per worker and
 * cached; the scripted cursor is supplied by the caller (it lives on the main thread). Remote
 * providers load the AI SDK lazily (offline daemons never pay for it) and read their API key
 * from the worker's environment here.
 */
import {
  MODEL_SPEC_VERSION,
  type Model,
  type ModelChunk,
  ModelCallError,
  type ModelSpec,
  type RemoteProvider,
} from "../core/model.ts";
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
    case "openai":
    case "anthropic":
    case "google":
    case "openai-compatible":
      return await buildRemoteModel({ ...spec, provider: spec.provider });
  }
}

async function buildRemoteModel(spec: ModelSpec & { provider: RemoteProvider }): Promise<Model> {
  const { readApiKey, languageModelOf } = await import("./providers/language-model.ts");
  const { AiSdkModel, DEFAULT_DEADLINES } = await import("./providers/ai-sdk-model.ts");
  const remote = {
    provider: spec.provider,
    name: spec.name,
    ...(spec.baseUrl === undefined ? {} : { baseUrl: spec.baseUrl }),
    ...(spec.apiKeyEnv === undefined ? {} : { apiKeyEnv: spec.apiKeyEnv }),
  };
  try {
    const deadlines = {
      stallTimeoutMs: spec.stallTimeoutMs ?? DEFAULT_DEADLINES.stallTimeoutMs,
      callTimeoutMs: spec.callTimeoutMs ?? DEFAULT_DEADLINES.callTimeoutMs,
    };
    return new AiSdkModel(
      spec.provider,
      spec.name,
      languageModelOf(remote, readApiKey(remote, process.env)),
      deadlines,
      spec.maxOutputTokens,
    );
  } catch (error) {
    // A missing key or base URL fails the turn with its own kind, not a generic config error.
    if (error instanceof ModelCallError) return new FailingModel(spec.provider, spec.name, error);
    throw error;
  }
}

/** A model whose every call fails with the same error (a provider that cannot be built). */
class FailingModel implements Model {
  readonly specificationVersion = MODEL_SPEC_VERSION;
  constructor(
    readonly provider: string,
    readonly name: string,
    readonly error: ModelCallError,
  ) {}

  // biome-ignore lint/correctness/useYield: a model that fails before its first chunk yields nothing.
  async *stream(): AsyncIterable<ModelChunk> {
    throw this.error;
  }
}
