/**
 * The remote providers spar knows (D16, D23): each one's usual API-key variable and default base
 * URL. Data only, no SDK import, so the CLI can validate flags without loading the AI SDK.
 */
import type { RemoteProvider } from "../../core/model.ts";

export interface ProviderFacts {
  /** Variable read for the API key when `--model-api-key-env` is not given; none for compatible servers. */
  apiKeyEnv: string | undefined;
  /** Base URL the SDK uses when `--model-base-url` is not given; compatible servers need one. */
  defaultBaseUrl: string | undefined;
  /** Wire protocol, for logs and docs. */
  wire: string;
}

export const REMOTE_PROVIDERS: Readonly<Record<RemoteProvider, ProviderFacts>> = {
  openai: {
    apiKeyEnv: "OPENAI_API_KEY",
    defaultBaseUrl: "https://api.openai.com/v1",
    wire: "OpenAI Responses API (SSE)",
  },
  anthropic: {
    apiKeyEnv: "ANTHROPIC_API_KEY",
    defaultBaseUrl: "https://api.anthropic.com/v1",
    wire: "Anthropic Messages API (SSE)",
  },
  google: {
    apiKeyEnv: "GOOGLE_GENERATIVE_AI_API_KEY",
    defaultBaseUrl: "https://generativelanguage.googleapis.com/v1beta",
    wire: "Gemini streamGenerateContent (SSE)",
  },
  "openai-compatible": { apiKeyEnv: undefined, defaultBaseUrl: undefined, wire: "OpenAI chat completions (SSE)" },
};

export function isRemoteProvider(value: string): value is RemoteProvider {
  return Object.hasOwn(REMOTE_PROVIDERS, value);
}

/** The variable the key is read from: the configured one, else the provider's usual one. */
export function apiKeyEnvOf(provider: RemoteProvider, configured: string | undefined): string | undefined {
  return configured ?? REMOTE_PROVIDERS[provider].apiKeyEnv;
}

/**
 * Why a remote provider has no API key in `env`: its variable unset or blank; undefined when it has
 * one, or needs none (a compatible server without a configured variable). The turn worker fails a
 * call with this; the daemons warn with it at startup.
 */
export function missingApiKey(
  provider: RemoteProvider,
  configured: string | undefined,
  env: Record<string, string | undefined>,
): string | undefined {
  const variable = apiKeyEnvOf(provider, configured);
  if (variable === undefined || (env[variable] ?? "").trim() !== "") return undefined;
  return `no API key for the ${provider} provider: environment variable ${variable} is not set (--model-api-key-env names another)`;
}
