/**
 * The end-to-end run every provider must pass: a real daemon started with `--provider=...
 * --model-base-url=http://127.0.0.1:<fake port>` drives turns over HTTP while a client reads
 * `/events`: a text turn, a tool-call turn (the call passes the gate, its result goes back to the
 * provider), usage and cost on GET /usage after POST /pricing/set, 429 / 401 / 404 / 503 as
 * turn-error kinds, an interrupt while the provider streams and a stream that stalls. The key never
 * shows in the log.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { shortenMessage } from "../../../src/core/turn-errors.ts";
import type { ModelRates } from "../../../src/core/usage.ts";
import { postJson } from "../../support/daemon.ts";
import { RECORDED, type Recorded } from "./recorded.ts";
import {
  type ProviderDaemon,
  type ProviderDaemonOptions,
  STALL_TIMEOUT_MS,
  perTurnUsage,
  runTurn,
  setRates,
  startProviderDaemon,
} from "./provider-daemon.ts";

export interface TurnUsageBody {
  input_tokens: number;
  input_tokens_cached?: number;
  input_tokens_cache_write?: number;
  input_tokens_uncached?: number;
  output_tokens: number;
  thoughts_tokens?: number;
  total_tokens: number;
  cost_usd: number;
  cost_usd_uncached_reference: number;
}

export interface EndToEndExpectations extends ProviderDaemonOptions {
  rates: ModelRates;
  /** GET /usage per_turn entry of the text turn (one model call). */
  textTurn: TurnUsageBody;
  /** per_turn entry of the tool turn: the tool-call call plus the text call after the result. */
  toolTurn: TurnUsageBody;
}

const TIMEOUT = 20_000;

export function describeProviderEndToEnd(run: EndToEndExpectations): void {
  const expected = { ...run, ...RECORDED[run.provider] };
  describe(`spar agent --provider=${expected.provider} end to end`, () => {
    let subject: ProviderDaemon;
    beforeAll(async () => {
      subject = await startProviderDaemon(expected);
      await setRates(subject, expected.model, expected.rates);
    }, TIMEOUT);
    afterAll(async () => {
      await subject?.stop();
    }, TIMEOUT);

    test(
      "a text turn streams the provider's deltas into text-delta frames and one committed reply",
      async () => {
        subject.fake.enqueue("text");
        const turn = await runTurn(subject, "hello");
        expect(turn.terminal.event).toBe("turn-complete");
        expect(turn.text).toBe("Hello! spar is listening.");
        const reply = turn.frames
          .filter((frame) => frame.event === "agent")
          .map((frame) => frame.data.event as { Content?: { role: string; parts: Array<{ text?: string }> } });
        expect(
          reply.some(
            (event) =>
              event.Content?.role === "model" &&
              event.Content.parts.some((part) => part.text === "Hello! spar is listening."),
          ),
        ).toBe(true);
        expect(turn.terminal.data).toMatchObject({ model: expected.model, tokens_in: expected.textTurn.input_tokens });
        expect(Number(turn.terminal.data.cost_usd)).toBeCloseTo(expected.textTurn.cost_usd, 12);
        const request = subject.fake.requests[subject.fake.requests.length - 1];
        const [header, render] = expected.keyHeader;
        expect(request?.headers[header]).toBe(render(subject.key));
        expect(JSON.stringify(request?.body)).toContain("hello");
        expectTurnUsage((await perTurnUsage(subject))[0], expected.model, expected.textTurn);
      },
      TIMEOUT,
    );

    test(
      "a tool-call turn: the call passes the gate, its result goes back keyed to the call, the turn completes",
      async () => {
        subject.fake.enqueue("tool-call", "text");
        const before = subject.fake.requests.length;
        const turn = await runTurn(subject, "what does the README say?");
        expect(turn.terminal.event).toBe("turn-complete");
        expect(subject.fake.requests.length - before).toBe(2);
        const rows = turn.frames
          .filter((frame) => frame.event === "agent")
          .map((frame) => JSON.stringify(frame.data.event));
        expect(rows.some((row) => row.includes("read_file") && row.includes("README.md"))).toBe(true);
        const followUp = subject.fake.requests[subject.fake.requests.length - 1];
        const carried = expected.toolResultIn(followUp?.body ?? {});
        expect(carried).toBeDefined();
        // The result answers the committed call: same id (Gemini's wire has none; it keys by name).
        const [callId, content] = carried ?? [];
        if (callId !== undefined) expect(rows.some((row) => row.includes(callId))).toBe(true);
        expect(content?.length ?? 0).toBeGreaterThan(2);
        const firstCall = subject.fake.requests[before];
        expect(JSON.stringify(firstCall?.body)).toContain("what does the README say?");
        expectTurnUsage((await perTurnUsage(subject))[1], expected.model, expected.toolTurn);
      },
      TIMEOUT,
    );

    const failures: Array<[string, string, boolean, keyof Recorded["messages"]]> = [
      ["429", "rate_limited", true, "rateLimited"],
      ["401", "auth_error", false, "auth"],
      ["404", "model_not_found", false, "notFound"],
      ["503", "transient_network", true, "unavailable"],
    ];
    test(
      "provider failures end turns as turn-error kinds with the provider's message; turns go on",
      async () => {
        for (const [fixture, kind, retryable, message] of failures) {
          subject.fake.always(fixture);
          try {
            const turn = await runTurn(subject, `trigger ${fixture}`);
            expect(turn.terminal.event).toBe("turn-error");
            expect(turn.terminal.data).toMatchObject({
              kind,
              retryable,
              code: fixture,
              message: shortenMessage(expected.messages[message]),
            });
          } finally {
            subject.fake.always(undefined);
          }
        }
        subject.fake.enqueue("text");
        expect((await runTurn(subject, "still there?")).terminal.event).toBe("turn-complete");
      },
      TIMEOUT,
    );

    test(
      "POST /interrupt cancels a turn while the provider is still streaming",
      async () => {
        subject.fake.enqueue("text!hang");
        const from = subject.events.frames.length;
        expect((await postJson(`${subject.base}/inject`, { message: "a long answer please" })).status).toBe(200);
        await subject.events.waitFor(
          (frame) => frame.event === "text-delta" && frame.data.text === "Hello",
          8000,
          from,
        );
        expect((await postJson(`${subject.base}/interrupt`, { hold: false })).status).toBe(200);
        const terminal = await subject.events.waitFor(
          (frame) => frame.event === "turn-complete" || frame.event === "turn-error",
          8000,
          from,
        );
        expect(terminal.data).toMatchObject({ kind: "canceled" });
        await subject.events.waitFor(
          (frame) => frame.event === "usage-update",
          3000,
          subject.events.frames.indexOf(terminal),
        );
      },
      TIMEOUT,
    );

    test(
      "a provider stream that stalls mid-response ends the turn as transient_network at the stall deadline",
      async () => {
        subject.fake.enqueue("text!hang");
        const started = Date.now();
        const turn = await runTurn(subject, "stall please");
        expect(Date.now() - started).toBeGreaterThanOrEqual(STALL_TIMEOUT_MS - 100);
        expect(turn.text).toBe("Hello");
        expect(turn.terminal.event).toBe("turn-error");
        expect(turn.terminal.data).toMatchObject({
          kind: "transient_network",
          retryable: true,
          code: "DEADLINE_EXCEEDED",
        });
      },
      TIMEOUT,
    );

    test("the API key never reaches the daemon's log", () => {
      expect(subject.daemon.log()).not.toContain(subject.key);
    });
  });
}

const OMITTED_WHEN_ZERO = [
  "input_tokens_cached",
  "input_tokens_cache_write",
  "input_tokens_uncached",
  "thoughts_tokens",
] as const;

function expectTurnUsage(actual: Record<string, unknown> | undefined, model: string, expected: TurnUsageBody): void {
  const { cost_usd, cost_usd_uncached_reference, ...tokens } = expected;
  expect(actual).toMatchObject({ model, ...tokens });
  // A count the provider did not report (or that is 0) is omitted, e.g. Gemini's cache writes.
  for (const key of OMITTED_WHEN_ZERO) if (expected[key] === undefined) expect(actual?.[key]).toBeUndefined();
  expect(Number(actual?.cost_usd)).toBeCloseTo(cost_usd, 12);
  expect(Number(actual?.cost_usd_uncached_reference)).toBeCloseTo(cost_usd_uncached_reference, 12);
}
