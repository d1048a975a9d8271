/**
 * The model settings both daemons share (D17, D23): `--provider`, `--model` and the remote
 * providers' base URL, key variable, timeouts, output cap and context window, and the one
 * resolver from them to a ModelSpec (echo, scripted, or a real provider). Where the scripted
 * model's script comes from differs per daemon (`--script` for the agent, `SVC_SCRIPT` for svc),
 * so the caller hands it in. Owns no model behaviour (src/models/).
 */
import { existsSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import type { ModelSpec, RemoteProvider } from "../core/model.ts";
import { type Result, err, ok } from "../core/result.ts";
import type { FlagSpec, FlagValue } from "../config/flag-spec.ts";
import { SettingReader } from "../config/setting-reader.ts";
import { REMOTE_PROVIDERS, isRemoteProvider } from "../models/providers/provider-catalog.ts";

export const MODEL_FLAGS: readonly FlagSpec[] = [
  {
    name: "provider",
    kind: "string",
    help: "model provider: echo, scripted, openai, anthropic, google or openai-compatible",
    defaultText: "echo",
    configKey: "model.provider",
  },
  {
    name: "model",
    kind: "string",
    help: "model: echo (offline), scripted (recorded-turn replay) or the provider's model id (gpt-5-mini, claude-sonnet-4-5, gemini-2.5-flash)",
    defaultText: "echo",
    configKey: "model.name",
  },
  {
    name: "model-base-url",
    kind: "string",
    help: "API base URL of the provider, version path included (http://127.0.0.1:8000/v1); required for openai-compatible",
    configKey: "model.base_url",
  },
  {
    name: "model-api-key-env",
    kind: "string",
    help: "name of the environment variable holding the provider's API key",
    defaultText: "OPENAI_API_KEY, ANTHROPIC_API_KEY, GOOGLE_GENERATIVE_AI_API_KEY; none for openai-compatible",
    configKey: "model.api_key_env",
  },
  {
    name: "model-stall-timeout",
    kind: "duration",
    help: "fail a model call when the provider sends nothing for this long (transient_network)",
    defaultText: "5m",
    configKey: "model.stall_timeout",
    bounds: { min: 100 },
  },
  {
    name: "model-call-timeout",
    kind: "duration",
    help: "fail a model call that has not finished after this long (transient_network)",
    defaultText: "15m",
    configKey: "model.call_timeout",
    bounds: { min: 100 },
  },
  {
    name: "model-max-output-tokens",
    kind: "int",
    help: "output-token cap of each model call (a call that hits it finishes `length` and auto-continue goes on)",
    defaultText: "the provider's",
    configKey: "model.max_output_tokens",
    bounds: { min: 1, max: 10_000_000 },
  },
  {
    name: "model-context-window",
    kind: "int",
    help: "the model's context window in tokens: past 80% of it the older turns are compacted into a summary",
    defaultText: "128000",
    configKey: "model.context_window",
    bounds: { min: 100, max: 100_000_000 },
  },
];

/** The scripted model's script as the daemon found it; `from` names where (`--script`, `SVC_SCRIPT`). */
export interface ScriptSetting {
  path: string;
  strict: boolean;
  from: string;
}

/** Where a daemon reads the scripted model's script: asked only when `scripted` is chosen. */
export interface ScriptSource {
  /** The script, or undefined when none is set; an error when the setting itself is malformed. */
  read(): Result<ScriptSetting | undefined>;
  /** The refusal when `scripted` is chosen and no script is set. */
  missing: string;
}

/** A bad setting; caught by resolveModelSpec and returned as its error. */
class ModelProblem extends Error {}

function need<T>(result: Result<T>): T {
  if (!result.ok) throw new ModelProblem(result.error);
  return result.value;
}

/** `--provider` / `--model` (flag, then config key, then echo) to a ModelSpec; errors name the flag or key. */
export function resolveModelSpec(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
  cwd: string,
  script: ScriptSource,
): Result<ModelSpec> {
  const read = new SettingReader(MODEL_FLAGS, flags, config);
  try {
    const spec = chooseModel(read, cwd, script);
    if (read.setting("model-context-window")) spec.contextWindowTokens = need(read.int("model-context-window", 0));
    return ok(spec);
  } catch (error) {
    if (error instanceof ModelProblem) return err(error.message);
    throw error;
  }
}

function chooseModel(read: SettingReader, cwd: string, script: ScriptSource): ModelSpec {
  const provider = need(read.string("provider", ""));
  const name = need(read.string("model", ""));
  if (provider !== "" && provider !== "echo" && provider !== "scripted" && !isRemoteProvider(provider)) {
    throw new ModelProblem(
      `${read.from("provider")} ${JSON.stringify(provider)} is not a provider; use echo, scripted, ${Object.keys(REMOTE_PROVIDERS).join(", ")}`,
    );
  }
  const chosen =
    provider || (name === "" || name === "echo" || name === "scripted" ? name || "echo" : inferProvider(name));
  if (chosen === "echo" || chosen === "scripted") {
    if (name !== "" && name !== chosen)
      throw new ModelProblem(
        `--provider=${chosen} and --model=${name} disagree; the ${chosen} provider has one model, ${chosen}`,
      );
    for (const remoteOnly of [
      "model-base-url",
      "model-api-key-env",
      "model-stall-timeout",
      "model-call-timeout",
      "model-max-output-tokens",
    ]) {
      const source = read.setting(remoteOnly);
      if (source) throw new ModelProblem(`${source.from} applies to remote providers only, not ${chosen}`);
    }
  }
  if (chosen === "echo") return { provider: "echo", name: "echo" };
  if (chosen === "scripted") return scriptedModel(script, cwd);
  return remoteModelSpec(read, chosen, name);
}

function scriptedModel(source: ScriptSource, cwd: string): ModelSpec {
  const script = need(source.read());
  if (script === undefined || script.path === "") throw new ModelProblem(source.missing);
  // Refused now rather than as a config_error on every turn.
  if (!existsSync(isAbsolute(script.path) ? script.path : join(cwd, script.path)))
    throw new ModelProblem(`${script.from}: ${script.path} does not exist`);
  return { provider: "scripted", name: "scripted", scriptPath: script.path, scriptStrict: script.strict };
}

/** A model id alone names its provider when its family is unmistakable; otherwise say which flag is missing. */
function inferProvider(name: string): RemoteProvider {
  if (/^(gpt-|chatgpt-|o\d)/.test(name)) return "openai";
  if (name.startsWith("claude-")) return "anthropic";
  if (name.startsWith("gemini-")) return "google";
  throw new ModelProblem(
    `--model=${name}: name its provider with --provider (${Object.keys(REMOTE_PROVIDERS).join(", ")})`,
  );
}

function baseUrlOf(read: SettingReader, provider: RemoteProvider): string | undefined {
  const baseUrl = need(read.string("model-base-url", ""));
  if (baseUrl === "") {
    if (provider === "openai-compatible")
      throw new ModelProblem(
        "--provider=openai-compatible needs --model-base-url (model.base_url), e.g. http://127.0.0.1:8000/v1",
      );
    return undefined;
  }
  const from = read.from("model-base-url");
  let parsed: URL;
  try {
    parsed = new URL(baseUrl);
  } catch {
    throw new ModelProblem(`${from} is not a URL (expected like http://127.0.0.1:8000/v1)`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    throw new ModelProblem(`${from} must be an http or https URL`);
  if (parsed.username !== "" || parsed.password !== "")
    throw new ModelProblem(
      `${from} must not carry credentials; put the key in the variable named by --model-api-key-env`,
    );
  return baseUrl.replace(/\/+$/, "");
}

function remoteModelSpec(read: SettingReader, provider: RemoteProvider, name: string): ModelSpec {
  if (name === "" || name === "echo" || name === "scripted" || /\s/.test(name)) {
    throw new ModelProblem(
      `--provider=${provider} needs --model with the provider's model id (for example ${EXAMPLE_MODELS[provider]})`,
    );
  }
  const spec: ModelSpec = { provider, name };
  const baseUrl = baseUrlOf(read, provider);
  if (baseUrl !== undefined) spec.baseUrl = baseUrl;
  const keyEnv = need(read.string("model-api-key-env", ""));
  if (keyEnv !== "") {
    // Never echo the value: someone may have pasted the key itself.
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(keyEnv)) {
      throw new ModelProblem(
        `${read.from("model-api-key-env")} takes the name of an environment variable (like OPENAI_API_KEY), not the key`,
      );
    }
    spec.apiKeyEnv = keyEnv;
  }
  if (read.setting("model-stall-timeout")) spec.stallTimeoutMs = need(read.duration("model-stall-timeout", 0));
  if (read.setting("model-call-timeout")) spec.callTimeoutMs = need(read.duration("model-call-timeout", 0));
  if (read.setting("model-max-output-tokens")) spec.maxOutputTokens = need(read.int("model-max-output-tokens", 0));
  return spec;
}

const EXAMPLE_MODELS: Readonly<Record<RemoteProvider, string>> = {
  openai: "gpt-5-mini",
  anthropic: "claude-sonnet-4-5",
  google: "gemini-2.5-flash",
  "openai-compatible": "the id your server lists at /v1/models",
};
