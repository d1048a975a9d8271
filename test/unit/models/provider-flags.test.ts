/**
 * The model flags and config keys of D23 turn into a serializable ModelSpec; bad values are
 * errors naming the flag or key (and never echo what might be a pasted key).
 */
import { expect, test } from "bun:test";
import { AGENT_FLAGS } from "../../../src/cli/agent-flags.ts";
import { buildAgentConfig } from "../../../src/cli/agent-config.ts";
import { parseFlags } from "../../../src/config/flag-parser.ts";

function model(argv: string[], config: Record<string, unknown> = {}) {
  const flags = parseFlags(AGENT_FLAGS, argv);
  if (!flags.ok) return flags;
  const built = buildAgentConfig(flags.value.values, new Map(Object.entries(config)), "/work", 2);
  return built.ok ? { ok: true as const, value: built.value.model } : built;
}

test("each remote provider with its model id, base URL and key variable", () => {
  expect(model(["--provider=openai", "--model=gpt-5-mini"])).toEqual({
    ok: true,
    value: { provider: "openai", name: "gpt-5-mini" },
  });
  expect(model(["--provider=anthropic", "--model=claude-sonnet-4-5", "--model-api-key-env=MY_CLAUDE_KEY"])).toEqual({
    ok: true,
    value: { provider: "anthropic", name: "claude-sonnet-4-5", apiKeyEnv: "MY_CLAUDE_KEY" },
  });
  expect(
    model(["--provider=google", "--model=gemini-2.5-flash", "--model-base-url=http://127.0.0.1:9999/v1beta/"]),
  ).toEqual({
    ok: true,
    value: { provider: "google", name: "gemini-2.5-flash", baseUrl: "http://127.0.0.1:9999/v1beta" },
  });
  expect(
    model(["--provider=openai-compatible", "--model=qwen3-coder", "--model-base-url=http://127.0.0.1:8000/v1"]),
  ).toEqual({
    ok: true,
    value: { provider: "openai-compatible", name: "qwen3-coder", baseUrl: "http://127.0.0.1:8000/v1" },
  });
});

test("the config keys model.provider, model.name, model.base_url, model.api_key_env; flags win", () => {
  const config = {
    "model.provider": "anthropic",
    "model.name": "claude-sonnet-4-5",
    "model.base_url": "https://proxy.example/v1",
    "model.api_key_env": "PROXY_KEY",
  };
  expect(model([], config)).toEqual({
    ok: true,
    value: {
      provider: "anthropic",
      name: "claude-sonnet-4-5",
      baseUrl: "https://proxy.example/v1",
      apiKeyEnv: "PROXY_KEY",
    },
  });
  expect(model(["--model=claude-opus-4-1"], config)).toMatchObject({ ok: true, value: { name: "claude-opus-4-1" } });
});

test("model-call deadlines: --model-stall-timeout and --model-call-timeout (model.stall_timeout, model.call_timeout)", () => {
  expect(
    model(["--provider=openai", "--model=gpt-5", "--model-stall-timeout=90s", "--model-call-timeout=20m"]),
  ).toMatchObject({
    ok: true,
    value: { stallTimeoutMs: 90_000, callTimeoutMs: 1_200_000 },
  });
  expect(model(["--model=gpt-5"], { "model.stall_timeout": "2m" })).toMatchObject({
    ok: true,
    value: { stallTimeoutMs: 120_000 },
  });
  expect(model(["--model=gpt-5", "--model-stall-timeout=soon"])).toEqual({
    ok: false,
    error: expect.stringContaining("--model-stall-timeout"),
  });
  expect(model(["--model=echo", "--model-call-timeout=1m"])).toEqual({
    ok: false,
    error: expect.stringContaining("applies to remote providers only"),
  });
});

test("a model id of an unmistakable family names its provider", () => {
  expect(model(["--model=gpt-5"])).toMatchObject({ ok: true, value: { provider: "openai", name: "gpt-5" } });
  expect(model(["--model=o4-mini"])).toMatchObject({ ok: true, value: { provider: "openai" } });
  expect(model(["--model=claude-haiku-4-5"])).toMatchObject({ ok: true, value: { provider: "anthropic" } });
  expect(model(["--model=gemini-2.5-pro"])).toMatchObject({ ok: true, value: { provider: "google" } });
  expect(model(["--model=llama3.1"])).toEqual({
    ok: false,
    error: expect.stringContaining("name its provider with --provider"),
  });
});

test("bad model settings are errors naming the flag or key", () => {
  const cases: Array<[string[], Record<string, unknown>, string]> = [
    [["--provider=mistral"], {}, '--provider "mistral" is not a provider'],
    [["--provider=openai"], {}, "--provider=openai needs --model"],
    [["--provider=openai", "--model=echo"], {}, "--provider=openai needs --model"],
    [["--provider=openai-compatible", "--model=m"], {}, "needs --model-base-url"],
    [["--provider=openai", "--model=gpt-5", "--model-base-url=not a url"], {}, "--model-base-url"],
    [["--provider=openai", "--model=gpt-5", "--model-base-url=ftp://host/v1"], {}, "http or https"],
    [
      ["--provider=openai", "--model=gpt-5", "--model-base-url=https://user:secret@host/v1"],
      {},
      "must not carry credentials",
    ],
    [["--provider=openai", "--model=gpt-5"], { "model.base_url": "::" }, "config key model.base_url"],
    [["--model=echo", "--model-base-url=http://127.0.0.1:1/v1"], {}, "applies to remote providers only"],
    [["--provider=echo", "--model=gpt-5"], {}, "disagree"],
  ];
  for (const [argv, config, message] of cases)
    expect(model(argv, config)).toEqual({ ok: false, error: expect.stringContaining(message) });
});

test("a key pasted where the variable name goes is refused without being echoed", () => {
  const result = model(["--provider=openai", "--model=gpt-5", "--model-api-key-env=sk-proj-abc123secret"]);
  expect(result).toEqual({ ok: false, error: expect.stringContaining("takes the name of an environment variable") });
  expect(JSON.stringify(result)).not.toContain("abc123secret");
});
