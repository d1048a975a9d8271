/**
 * Turn and model-call histograms over OTLP (issue 18 item 4, D304), beside the Prometheus series
 * the exposition bridge exports: `spar.turn.duration` (s, by agent and outcome) and the GenAI
 * conventions' `gen_ai.client.token.usage` (tokens per model call, by `gen_ai.token.type`,
 * provider and model). Instruments come from the global meter provider and are made again when
 * it changes (telemetry started or stopped); with metrics off they are the API's no-ops.
 */
import { type Histogram, type MeterProvider, metrics } from "@opentelemetry/api";
import type { TokenUsage } from "../core/usage.ts";

interface Instruments {
  provider: MeterProvider;
  turnDuration: Histogram;
  tokenUsage: Histogram;
}

let current: Instruments | undefined;

function instruments(): Instruments {
  const provider = metrics.getMeterProvider();
  if (current?.provider === provider) return current;
  const meter = provider.getMeter("spar");
  current = {
    provider,
    turnDuration: meter.createHistogram("spar.turn.duration", {
      unit: "s",
      description: "How long a turn ran, from its prompt row to its terminal frame",
      advice: { explicitBucketBoundaries: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600] },
    }),
    tokenUsage: meter.createHistogram("gen_ai.client.token.usage", {
      unit: "{token}",
      description: "Tokens a model call used, input and output",
      advice: {
        explicitBucketBoundaries: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304],
      },
    }),
  };
  return current;
}

export function recordTurn(seconds: number, agent: string, outcome: string): void {
  instruments().turnDuration.record(seconds, { "gen_ai.agent.name": agent, "spar.turn.outcome": outcome });
}

export function recordModelCallTokens(usage: TokenUsage, provider: string, model: string): void {
  const { tokenUsage } = instruments();
  const attributes = {
    "gen_ai.provider.name": provider,
    "gen_ai.request.model": model,
    "gen_ai.operation.name": "chat",
  };
  tokenUsage.record(usage.inputTokens, { ...attributes, "gen_ai.token.type": "input" });
  tokenUsage.record(usage.outputTokens, { ...attributes, "gen_ai.token.type": "output" });
}
