/**
 * Resolves a remote ModelSpec into an AI SDK language model: a provider instance built with its
 * base URL and key (never a gateway model string, D16). Runs inside the turn worker, which is
 * where the key is read from the environment; the key is never logged or put in an error.
 */
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogle } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { LanguageModel } from "ai";
import { ModelCallError, type RemoteProvider } from "../../core/model.ts";
import { apiKeyEnvOf, missingApiKey } from "./provider-catalog.ts";

export interface RemoteModelSpec {
  provider: RemoteProvider;
  name: string;
  baseUrl?: string;
  apiKeyEnv?: string;
}

/**
 * The API key from the environment, or a ModelCallError (`UNAUTHENTICATED`, an auth_error turn)
 * naming the variable when it is unset. Compatible servers without a configured variable get none.
 */
export function readApiKey(spec: RemoteModelSpec, env: Record<string, string | undefined>): string | undefined {
  const missing = missingApiKey(spec.provider, spec.apiKeyEnv, env);
  if (missing !== undefined) throw new ModelCallError(missing, "UNAUTHENTICATED");
  const variable = apiKeyEnvOf(spec.provider, spec.apiKeyEnv);
  return variable === undefined ? undefined : env[variable]?.trim();
}

/** Builds the provider instance and its language model for one spec. */
export function languageModelOf(spec: RemoteModelSpec, apiKey: string | undefined): LanguageModel {
  const baseURL = spec.baseUrl;
  const common = { ...(baseURL === undefined ? {} : { baseURL }), ...(apiKey === undefined ? {} : { apiKey }) };
  switch (spec.provider) {
    case "openai":
      // The provider's default model is the Responses API.
      return createOpenAI(common)(spec.name);
    case "anthropic":
      return createAnthropic(common)(spec.name);
    case "google":
      return createGoogle(common)(spec.name);
    case "openai-compatible": {
      if (baseURL === undefined) {
        throw new ModelCallError("the openai-compatible provider needs --model-base-url (model.base_url)", "CONFIG");
      }
      return createOpenAICompatible({
        name: "openai-compatible",
        baseURL,
        includeUsage: true,
        ...(apiKey === undefined ? {} : { apiKey }),
      })(spec.name);
    }
  }
}
