/**
 * What the recorded fixtures of each provider say, in one place for the wire tests and the
 * end-to-end tests: the error messages of the 429 / 401 / 404 / 503 bodies, the header that
 * carries the key, and where a tool result sits in the request that carries it back.
 */
import type { RemoteProvider } from "../../../src/core/model.ts";

export interface Recorded {
  keyHeader: [name: string, render: (key: string) => string];
  messages: { rateLimited: string; auth: string; notFound: string; unavailable: string };
  /** Message of the provider's answer to a wrong key (the fake gives it for any other key). */
  wrongKey: string;
  toolResultIn(body: Record<string, unknown>): [callId: string | undefined, content: string] | undefined;
}

const bearer = (key: string) => `Bearer ${key}`;

export const RECORDED: Record<RemoteProvider, Recorded> = {
  openai: {
    keyHeader: ["authorization", bearer],
    messages: {
      rateLimited:
        "Rate limit reached for gpt-5-mini in organization org-Xq1 on tokens per min (TPM): Limit 200000, Used 199912, Requested 1204. Please try again in 334ms. Visit https://platform.openai.com/account/rate-limits to learn more.",
      auth: "Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.",
      notFound: "The model `gpt-nope` does not exist or you do not have access to it.",
      unavailable: "The server is overloaded or not ready yet.",
    },
    wrongKey:
      "Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.",
    toolResultIn: (body) => {
      const input = body.input as Array<Record<string, unknown>>;
      const output = input.find((item) => item.type === "function_call_output");
      return output ? [String(output.call_id), String(output.output)] : undefined;
    },
  },
  anthropic: {
    keyHeader: ["x-api-key", (key) => key],
    messages: {
      rateLimited:
        "This request would exceed the rate limit for your organization (1b2c3d4e-0000-4000-8000-a1b2c3d4e5f6) of 30,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.",
      auth: "invalid x-api-key",
      notFound: "model: claude-nope",
      unavailable: "Service temporarily unavailable",
    },
    wrongKey: "invalid x-api-key",
    toolResultIn: (body) => {
      const messages = body.messages as Array<{ role: string; content: Array<Record<string, unknown>> | string }>;
      const result = messages
        .flatMap((message) => (Array.isArray(message.content) ? message.content : []))
        .find((part) => part.type === "tool_result");
      return result ? [String(result.tool_use_id), JSON.stringify(result.content)] : undefined;
    },
  },
  google: {
    keyHeader: ["x-goog-api-key", (key) => key],
    messages: {
      rateLimited:
        "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
      // The recorded 401 is OAuth's; a bad API key is 400 API_KEY_INVALID (the fake's answer to a wrong key).
      auth: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
      notFound:
        "models/gemini-nope is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.",
      unavailable: "The model is overloaded. Please try again later.",
    },
    wrongKey: "API key not valid. Please pass a valid API key.",
    // Gemini keys a function response by the function's name (calls carry no id on this wire).
    toolResultIn: (body) => {
      const contents = body.contents as Array<{ parts: Array<Record<string, unknown>> }>;
      const part = contents.flatMap((content) => content.parts).find((item) => item.functionResponse !== undefined);
      const response = part?.functionResponse as { name: string; response: unknown } | undefined;
      return response ? [undefined, `${response.name} ${JSON.stringify(response.response)}`] : undefined;
    },
  },
  "openai-compatible": {
    keyHeader: ["authorization", bearer],
    messages: {
      rateLimited: "Rate limit exceeded: 20 requests per minute",
      auth: "Invalid API key",
      // vLLM puts the message at the top level, not under `error`.
      notFound: "The model `qwen-nope` does not exist.",
      unavailable: "upstream connect error or disconnect/reset before headers. reset reason: overflow",
    },
    wrongKey: "Invalid API key",
    toolResultIn: (body) => {
      const messages = body.messages as Array<Record<string, unknown>>;
      const tool = messages.find((message) => message.role === "tool");
      return tool ? [String(tool.tool_call_id), String(tool.content)] : undefined;
    },
  },
};
