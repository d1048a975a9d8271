/**
 * The telemetry plan (src/telemetry/telemetry-plan.ts): off unless something is configured, the
 * environment over the flag, the OTLP URL rules, protocols, sampler, resource, and a bad
 * environment value warned about and replaced by its default.
 */
import { describe, expect, test } from "bun:test";
import { resolveTelemetryPlan, type TelemetrySettings } from "../../../src/telemetry/telemetry-plan.ts";

const IDENTITY = { version: "9.9.9", instanceId: "instance-1" };

function plan(
  env: Record<string, string>,
  settings: TelemetrySettings = {},
  role: "agent" | "svc" | "watcher" = "agent",
) {
  const warnings: string[] = [];
  const resolved = resolveTelemetryPlan(role, settings, env, IDENTITY, (message) => warnings.push(message));
  return { resolved, warnings };
}

describe("off", () => {
  test("nothing configured: no plan", () => {
    expect(plan({}).resolved).toBeUndefined();
  });

  test("variables that configure but do not enable (headers, service name, protocol) leave it off", () => {
    const env = { OTEL_EXPORTER_OTLP_HEADERS: "a=b", OTEL_SERVICE_NAME: "x", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" };
    expect(plan(env).resolved).toBeUndefined();
  });

  test("OTEL_SDK_DISABLED=true wins over an endpoint, a flag and an exporter", () => {
    const env = {
      OTEL_SDK_DISABLED: "TRUE",
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_TRACES_EXPORTER: "otlp",
    };
    expect(plan(env, { endpoint: "http://flag:4318" }).resolved).toBeUndefined();
  });

  test("OTEL_TRACES_EXPORTER=none and OTEL_METRICS_EXPORTER=none turn an endpoint off", () => {
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_TRACES_EXPORTER: "none",
      OTEL_METRICS_EXPORTER: "none",
    };
    expect(plan(env).resolved).toBeUndefined();
  });
});

describe("endpoints", () => {
  test("the flag's base URL gets the signal paths", () => {
    const { resolved } = plan({}, { endpoint: "http://collector:4318" });
    expect(resolved?.traces).toEqual({
      exporter: "otlp",
      url: "http://collector:4318/v1/traces",
      protocol: "http/protobuf",
    });
    expect(resolved?.metrics?.url).toBe("http://collector:4318/v1/metrics");
  });

  test("OTEL_EXPORTER_OTLP_ENDPOINT overrides the flag; a trailing slash is not doubled", () => {
    const { resolved } = plan({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://env:4318/" }, { endpoint: "http://flag:4318" });
    expect(resolved?.traces).toMatchObject({ url: "http://env:4318/v1/traces" });
  });

  test("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as is and enables spans only", () => {
    const { resolved } = plan({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t:4318/custom" });
    expect(resolved?.traces).toMatchObject({ url: "http://t:4318/custom" });
    expect(resolved?.metrics).toBeUndefined();
  });

  test("an unparseable environment endpoint is warned about and ignored", () => {
    const { resolved, warnings } = plan({ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" }, { endpoint: "http://flag:4318" });
    expect(resolved?.traces).toMatchObject({ url: "http://flag:4318/v1/traces" });
    expect(warnings.join("\n")).toContain("OTEL_EXPORTER_OTLP_ENDPOINT ignored");
  });
});

describe("exporters and protocols", () => {
  test("the watcher's --otel-exporter=console prints spans and exports no metrics", () => {
    const { resolved } = plan({}, { exporter: "console" }, "watcher");
    expect(resolved?.traces).toEqual({ exporter: "console" });
    expect(resolved?.metrics).toBeUndefined();
  });

  test("--otel-exporter=otlp with no endpoint goes to the default collector, metrics too", () => {
    const { resolved } = plan({}, { exporter: "otlp" }, "watcher");
    expect(resolved?.traces).toMatchObject({ url: "http://localhost:4318/v1/traces" });
    expect(resolved?.metrics?.url).toBe("http://localhost:4318/v1/metrics");
  });

  test("OTEL_TRACES_EXPORTER overrides --otel-exporter (the spec's 'the standard env var overrides')", () => {
    expect(plan({ OTEL_TRACES_EXPORTER: "console" }, { exporter: "otlp" }).resolved?.traces).toEqual({
      exporter: "console",
    });
  });

  test("http/json per signal; grpc is warned about and replaced by http/protobuf", () => {
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
    };
    const { resolved, warnings } = plan(env);
    expect(resolved?.traces).toMatchObject({ protocol: "http/json" });
    expect(resolved?.metrics?.protocol).toBe("http/protobuf");
    expect(warnings.join("\n")).toContain("OTEL_EXPORTER_OTLP_PROTOCOL=grpc not supported");
  });

  test("the metric interval and the batch delay come from their variables; the timeout never exceeds the interval", () => {
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_METRIC_EXPORT_INTERVAL: "1000",
      OTEL_BSP_SCHEDULE_DELAY: "60000",
    };
    const { resolved } = plan(env);
    expect(resolved?.metrics).toMatchObject({ intervalMs: 1000, timeoutMs: 1000 });
    expect(resolved?.batch.scheduledDelayMillis).toBe(60_000);
  });
});

describe("sampler and resource", () => {
  test("parent-based always-on by default; parentbased_traceidratio with its argument", () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" };
    expect(plan(on).resolved?.sampler).toEqual({ root: "always_on", parentBased: true, ratio: 1 });
    const ratio = { ...on, OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.25" };
    expect(plan(ratio).resolved?.sampler).toEqual({ root: "traceidratio", parentBased: true, ratio: 0.25 });
  });

  test("an unknown sampler or a ratio out of range is warned about", () => {
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_TRACES_SAMPLER: "traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "7",
    };
    const { resolved, warnings } = plan(env);
    expect(resolved?.sampler.ratio).toBe(1);
    expect(warnings.join("\n")).toContain("OTEL_TRACES_SAMPLER_ARG=7");
  });

  test("service.name per role, version and instance id; OTEL_RESOURCE_ATTRIBUTES adds and OTEL_SERVICE_NAME wins", () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" };
    expect(plan(on, {}, "svc").resolved?.resource).toEqual({
      "service.name": "spar-svc",
      "service.version": "9.9.9",
      "service.instance.id": "instance-1",
    });
    const env = {
      ...on,
      OTEL_RESOURCE_ATTRIBUTES: "service.name=from-attributes,deployment.environment.name=prod%20eu,bad",
      OTEL_SERVICE_NAME: "triage",
    };
    const { resolved, warnings } = plan(env, {}, "watcher");
    expect(resolved?.resource).toMatchObject({ "service.name": "triage", "deployment.environment.name": "prod eu" });
    expect(warnings.join("\n")).toContain('ignoring "bad"');
  });
});
