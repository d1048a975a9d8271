/**
 * End-to-end harness for one provider: its wire fake, a real `spar agent` pointed at it with
 * `--provider`, `--model`, `--model-base-url` (and the key in an environment variable), an
 * `/events` collector on the default session, and helpers to run one turn and read /usage.
 */
import { expect } from "bun:test";
import type { RemoteProvider } from "../../../src/core/model.ts";
import type { ModelRates } from "../../../src/core/usage.ts";
import { type Daemon, postJson, startDaemon } from "../../support/daemon.ts";
import { type Collector, type Frame, collect } from "../../support/sse-client.ts";
import { type ProviderFake, startProviderFake } from "./provider-fake.ts";

export const STALL_TIMEOUT_MS = 2000;

export interface ProviderDaemon {
  fake: ProviderFake;
  daemon: Daemon;
  events: Collector;
  key: string;
  base: string;
  stop(): Promise<void>;
}

export interface ProviderDaemonOptions {
  provider: RemoteProvider;
  model: string;
  /** Variable that holds the key: the provider's usual one unless `--model-api-key-env` is passed. */
  keyEnv: string;
  /** Pass `--model-api-key-env=<keyEnv>` (needed when keyEnv is not the provider's default). */
  keyFlag: boolean;
}

export async function startProviderDaemon(options: ProviderDaemonOptions): Promise<ProviderDaemon> {
  const key = `e2e-secret-${options.provider}-4f1c9a`;
  const fake = startProviderFake(options.provider, { apiKey: key, models: [options.model] });
  const args = [
    `--provider=${options.provider}`,
    `--model=${options.model}`,
    `--model-base-url=${fake.baseUrl}`,
    ...(options.keyFlag ? [`--model-api-key-env=${options.keyEnv}`] : []),
    // Short enough for the stall test, long enough for an interrupt to land first on a busy machine.
    `--model-stall-timeout=${STALL_TIMEOUT_MS}ms`,
    "--permission-mode=yolo",
    "--workers=1",
  ];
  const daemon = await startDaemon({ args, env: { [options.keyEnv]: key } });
  const events = collect(`${daemon.baseUrl}/sessions/default/events`);
  await events.waitFor((frame) => frame.event === "usage-update");
  return {
    fake,
    daemon,
    events,
    key,
    base: `${daemon.baseUrl}/sessions/default`,
    stop: async () => {
      events.close();
      await daemon.sigterm();
      fake.stop();
    },
  };
}

export interface TurnFrames {
  frames: Frame[];
  terminal: Frame;
  text: string;
}

/** Injects a message and returns the turn's frames up to the usage-update after its terminal frame. */
export async function runTurn(subject: ProviderDaemon, message: string): Promise<TurnFrames> {
  const from = subject.events.frames.length;
  const response = await postJson(`${subject.base}/inject`, { message });
  expect(response.status).toBe(200);
  const terminal = await subject.events.waitFor(
    (frame) => frame.event === "turn-complete" || frame.event === "turn-error",
    8000,
    from,
  );
  const after = subject.events.frames.indexOf(terminal);
  await subject.events.waitFor((frame) => frame.event === "usage-update", 3000, after);
  const frames = subject.events.frames.slice(from);
  const text = frames
    .filter((frame) => frame.event === "text-delta")
    .map((frame) => String(frame.data.text))
    .join("");
  return { frames, terminal, text };
}

export async function setRates(subject: ProviderDaemon, model: string, rates: ModelRates): Promise<void> {
  const body: Record<string, unknown> = {
    model,
    input_usd_per_mtok: rates.inputUsdPerMTok,
    output_usd_per_mtok: rates.outputUsdPerMTok,
  };
  if (rates.cachedUsdPerMTok !== undefined) body.cached_usd_per_mtok = rates.cachedUsdPerMTok;
  if (rates.cacheWriteUsdPerMTok !== undefined) body.cache_write_usd_per_mtok = rates.cacheWriteUsdPerMTok;
  expect((await postJson(`${subject.base}/pricing/set`, body)).status).toBe(204);
}

export async function perTurnUsage(subject: ProviderDaemon): Promise<Array<Record<string, unknown>>> {
  const usage = (await (await fetch(`${subject.base}/usage`)).json()) as { per_turn?: Array<Record<string, unknown>> };
  return usage.per_turn ?? [];
}
