/**
 * Telemetry started inside the test process against a local OTLP receiver (spans batched for
 * 20 ms, metrics off), for tests of span-making code that runs in process; `stop` flushes and
 * shuts both down. One at a time per process (the SDK's globals).
 */
import { createLogger } from "../../src/telemetry/logger.ts";
import type { TelemetryRole } from "../../src/telemetry/telemetry-plan.ts";
import { startTelemetry } from "../../src/telemetry/telemetry.ts";
import { type OtlpReceiver, startOtlpReceiver } from "./otlp-receiver.ts";

export interface InProcessTelemetry {
  receiver: OtlpReceiver;
  stop(): Promise<void>;
}

export async function startInProcessTelemetry(role: TelemetryRole = "agent"): Promise<InProcessTelemetry> {
  const receiver = startOtlpReceiver();
  const telemetry = await startTelemetry(role, {
    settings: { endpoint: receiver.url },
    version: "test",
    logger: createLogger("error"),
    env: { OTEL_BSP_SCHEDULE_DELAY: "20", OTEL_METRICS_EXPORTER: "none" },
  });
  return {
    receiver,
    stop: async () => {
      await telemetry.shutdown();
      await receiver.stop();
    },
  };
}
