/**
 * The wire tests every provider must pass, run against its fake with its recorded bodies: a text
 * call, a tool-call call, the tool result sent back, the output cap, 429 / 401 / 404 / 503 and
 * their turn-error kinds, a missing key, an unreachable server. Expected numbers are passed in by
 * each provider's test file, computed there by hand; what the fixtures say is in recorded.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { ChatMessage, RemoteProvider } from "../../../src/core/model.ts";
import { classifyTurnFailure } from "../../../src/core/turn-errors.ts";
import { type ModelRates, type TokenUsage, priceUsage } from "../../../src/core/usage.ts";
import { callModel, remoteModel } from "./model-call.ts";
import { type ProviderFake, type RecordedRequest, startProviderFake } from "./provider-fake.ts";
import { waitFor } from "../../support/daemon.ts";
import { RECORDED } from "./recorded.ts";

export interface PricedCall {
  usage: TokenUsage;
  rates: ModelRates;
  costUsd: number;
  costUsdUncachedReference: number;
}

export interface WireExpectations {
  provider: RemoteProvider;
  model: string;
  text: PricedCall;
  toolCall: PricedCall & { callId: string | RegExp; text: string };
}

export const TOOL_ROUND: (callId: string) => ChatMessage[] = (callId) => [
  { role: "user", text: "what does the README say?" },
  { role: "assistant", text: "", toolCalls: [{ callId, name: "read_file", args: { path: "README.md" } }] },
  { role: "tool", callId, name: "read_file", output: { content: "# spar" }, isError: false },
];

export function describeProviderWire(wire: WireExpectations): void {
  const expected = { ...wire, ...RECORDED[wire.provider] };
  const keyVar = `SPAR_TEST_${expected.provider.toUpperCase().replace(/-/g, "_")}_KEY`;
  const key = `test-key-${expected.provider}`;
  let fake: ProviderFake;
  const spec = (name = expected.model) => ({
    provider: expected.provider,
    name,
    baseUrl: fake.baseUrl,
    apiKeyEnv: keyVar,
  });
  const lastRequest = (): RecordedRequest => {
    const request = fake.requests[fake.requests.length - 1];
    if (!request) throw new Error("the fake saw no request");
    return request;
  };

  describe(`${expected.provider} through the AI SDK against its wire fake`, () => {
    beforeAll(() => {
      process.env[keyVar] = key;
      fake = startProviderFake(expected.provider, { apiKey: key, models: [expected.model] });
    });
    afterAll(() => {
      fake.stop();
      delete process.env[keyVar];
    });

    test("a text call streams its deltas, finishes stop, maps usage and prices it", async () => {
      fake.enqueue("text");
      const result = await callModel(await remoteModel(spec()));
      expect(result.error).toBeUndefined();
      expect(result.deltas).toEqual(["Hello", "! spar is", " listening."]);
      // The provider's text bracketing reaches the message parts: one text part around the deltas.
      expect(result.parts.map((part) => part.kind)).toEqual([
        "text-start",
        "text-delta",
        "text-delta",
        "text-delta",
        "text-end",
      ]);
      expect(result.toolCalls).toEqual([]);
      expect(result.finish?.finishReason).toBe("stop");
      expectPriced(result.finish?.usage, expected.text);
      const [header, render] = expected.keyHeader;
      expect(lastRequest().headers[header]).toBe(render(key));
    });

    test("a tool-call call hands the call back (nothing executed) and finishes tool-calls", async () => {
      fake.enqueue("tool-call");
      const result = await callModel(await remoteModel(spec()));
      expect(result.error).toBeUndefined();
      expect(result.text).toBe(expected.toolCall.text);
      expect(result.toolCalls).toHaveLength(1);
      expect(result.toolCalls[0]?.name).toBe("read_file");
      expect(result.toolCalls[0]?.args).toEqual({ path: "README.md" });
      expect(result.toolCalls[0]?.callId).toMatch(expected.toolCall.callId);
      // The call streams as one start, its argument text, one end, all under its call id.
      const callParts = result.parts.filter((part) => part.kind.startsWith("tool-call"));
      const callId = result.toolCalls[0]?.callId;
      expect(callParts[0]).toEqual({ kind: "tool-call-start", callId: callId ?? "", name: "read_file" });
      expect(callParts.at(-1)).toEqual({ kind: "tool-call-end", callId: callId ?? "" });
      const args = callParts.map((part) => (part.kind === "tool-call-delta" ? part.delta : "")).join("");
      expect(JSON.parse(args)).toEqual({ path: "README.md" });
      expect(result.finish?.finishReason).toBe("tool-calls");
      expectPriced(result.finish?.usage, expected.toolCall);
      expect(JSON.stringify(lastRequest().body)).toContain("read_file");
    });

    test("the tool result goes back to the provider keyed to its call", async () => {
      fake.enqueue("text");
      const result = await callModel(await remoteModel(spec()), TOOL_ROUND("call_abc123"));
      expect(result.error).toBeUndefined();
      const carried = expected.toolResultIn(lastRequest().body);
      expect(carried).toBeDefined();
      const [callId, content] = carried ?? [];
      if (callId !== undefined) expect(callId).toBe("call_abc123");
      expect(content).toContain("# spar");
    });

    test("a response cut by the output-token cap finishes length", async () => {
      fake.enqueue("length");
      const result = await callModel(await remoteModel(spec()), undefined, undefined, { maxOutputTokens: 16 });
      expect(result.text).toBe("The first half of");
      expect(result.finish?.finishReason).toBe("length");
    });

    test("an abort mid-stream ends the call quietly: no finish, no error, the connection closed", async () => {
      const canceledBefore = fake.canceledStreams();
      fake.enqueue("text!hang");
      const controller = new AbortController();
      const model = await remoteModel(spec());
      const seen: string[] = [];
      for await (const chunk of model.stream({
        messages: [{ role: "user", text: "hello" }],
        tools: [],
        signal: controller.signal,
      })) {
        seen.push(chunk.type);
        if (chunk.type === "text-delta") controller.abort();
      }
      expect(seen).toEqual(["text-start", "text-delta"]);
      await waitFor(() => (fake.canceledStreams() > canceledBefore ? true : undefined), 5000, "the stream's cancel");
      expect(fake.canceledStreams()).toBe(canceledBefore + 1);
    });

    test("a stream that stalls mid-response fails at the stall deadline as transient_network", async () => {
      fake.enqueue("text!hang");
      const started = Date.now();
      const result = await callModel(await remoteModel({ ...spec(), stallTimeoutMs: 300 }));
      expect(Date.now() - started).toBeLessThan(3000);
      expect(result.deltas).toEqual(["Hello"]);
      expect(result.finish).toBeUndefined();
      expect(result.error?.status).toBe("DEADLINE_EXCEEDED");
      expect(result.error?.message).toContain("--model-stall-timeout");
      expect(classifyTurnFailure(result.error?.message ?? "", result.error?.status)).toMatchObject({
        kind: "transient_network",
        retryable: true,
      });
    });

    test("a call past its overall deadline fails as transient_network even while the stream is open", async () => {
      fake.enqueue("text!hang");
      const result = await callModel(await remoteModel({ ...spec(), stallTimeoutMs: 30_000, callTimeoutMs: 400 }));
      expect(result.error?.status).toBe("DEADLINE_EXCEEDED");
      expect(result.error?.message).toContain("--model-call-timeout");
    });

    const failures: Array<[string, string, () => string, string, boolean]> = [
      ["429", "rate_limited", () => expected.messages.rateLimited, "429", true],
      ["404", "model_not_found", () => expected.messages.notFound, "404", false],
      ["503", "transient_network", () => expected.messages.unavailable, "503", true],
    ];
    for (const [fixture, kind, message, code, retryable] of failures) {
      test(`a recorded ${fixture} becomes turn-error ${kind}, tried once`, async () => {
        const before = fake.requests.length;
        fake.enqueue(fixture);
        const result = await callModel(await remoteModel(spec()));
        expect(result.finish).toBeUndefined();
        expect(result.error?.status).toBe(code);
        expect(result.error?.message).toBe(message());
        expect(classifyTurnFailure(result.error?.message ?? "", result.error?.status)).toMatchObject({
          kind,
          retryable,
        });
        expect(fake.requests.length - before).toBe(1);
      });
    }

    test("an unknown model gets the provider's 404 (model_not_found)", async () => {
      const result = await callModel(await remoteModel(spec("no-such-model")));
      expect(classifyTurnFailure(result.error?.message ?? "", result.error?.status).kind).toBe("model_not_found");
    });

    test("a wrong key gets the provider's auth failure (auth_error)", async () => {
      process.env[keyVar] = "wrong-key";
      try {
        const result = await callModel(await remoteModel(spec()));
        expect(result.error?.message).toBe(expected.wrongKey);
        expect(classifyTurnFailure(result.error?.message ?? "", result.error?.status)).toMatchObject({
          kind: "auth_error",
          retryable: false,
        });
      } finally {
        process.env[keyVar] = key;
      }
    });

    test("an unset key variable fails the call as auth_error naming the variable, without a request", async () => {
      const before = fake.requests.length;
      const result = await callModel(await remoteModel({ ...spec(), apiKeyEnv: `${keyVar}_UNSET` }));
      expect(result.error?.message).toContain(`${keyVar}_UNSET`);
      expect(classifyTurnFailure(result.error?.message ?? "", result.error?.status).kind).toBe("auth_error");
      expect(fake.requests.length).toBe(before);
    });

    test("an unreachable base URL is transient_network", async () => {
      const closed = startProviderFake(expected.provider);
      await closed.stop();
      const result = await callModel(await remoteModel({ ...spec(), baseUrl: closed.baseUrl }));
      expect(result.error?.message).toContain(`127.0.0.1:${closed.port}`);
      expect(classifyTurnFailure(result.error?.message ?? "", result.error?.status)).toMatchObject({
        kind: "transient_network",
        retryable: true,
      });
    });
  });
}

function expectPriced(usage: TokenUsage | undefined, expected: PricedCall): void {
  expect(usage).toEqual(expected.usage);
  if (!usage) return;
  // Invariant: the three input kinds are disjoint and sum to input.
  const uncached = usage.inputTokens - usage.cachedInputTokens - usage.cacheWriteInputTokens;
  expect(uncached).toBeGreaterThanOrEqual(0);
  const cost = priceUsage(usage, expected.rates);
  expect(cost.costUsd).toBeCloseTo(expected.costUsd, 12);
  expect(cost.costUsdUncachedReference).toBeCloseTo(expected.costUsdUncachedReference, 12);
}
