/**
 * (d) A write-gate park and its approval after a daemon restart are linked (D302): the park is a
 * span in the trace of the inject that led to it, under the parked call's own span; the verdict
 * given on the next daemon, from another request's trace, is a span there with a link back to
 * the park (its context was stored in the durable interrupt row).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { countedCalls } from "../../fixtures/mcp/counting.ts";
import { tempDir } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { APPLY, AUTH, gatedDaemonOptions, gatedWorkload, postTo, resume } from "../../support/gated-workload.ts";
import { type OtlpReceiver, startOtlpReceiver } from "../../support/otlp-receiver.ts";
import { call, say } from "../../support/scripted.ts";

const scope = daemonScope();
let receiver: OtlpReceiver;
beforeAll(() => {
  receiver = startOtlpReceiver();
});
afterAll(async () => receiver.stop());

test("(d) the approval on a restarted daemon links back to the park, across traces", async () => {
  const workload = gatedWorkload();
  const sessionDb = join(tempDir(), "svc.db");
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "50" };
  const first = await scope.start(
    gatedDaemonOptions(workload, [call("worker", { request: "scale web to 4" }), call(APPLY, { replicas: 4 })], {
      sessionDb,
      env,
    }),
  );
  const injectTrace = "8bf92f3577b34da6a3ce929d0e0e4738";
  const injected = await postTo(
    first,
    "/inject",
    { uid: "g1", reason: "ScaleUp", name: "web" },
    { ...AUTH, traceparent: `00-${injectTrace}-40f067aa0ba902b7-01` },
  );
  expect(injected.status).toBe(202);
  const interruptId = String((injected.body.pending as Array<{ interrupt_id: string }>)[0]?.interrupt_id);
  expect(await first.sigterm()).toBe(0);
  const [park] = await receiver
    .waitForSpans((spans) => spans.some((span) => span.traceId === injectTrace && span.name === `gate park ${APPLY}`))
    .then((spans) => spans.filter((span) => span.name === `gate park ${APPLY}`));
  const parkedCall = receiver.spans.find((span) => span.spanId === park?.parentSpanId);
  expect(parkedCall?.name).toBe(`execute_tool ${APPLY}`);
  expect(park?.attributes["spar.gate.interrupt_id"]).toBe(interruptId);

  const second = await scope.start(
    gatedDaemonOptions(workload, [call("finish_task", { result: "scaled" }), say("done")], { sessionDb, env }),
  );
  const approveTrace = "9bf92f3577b34da6a3ce929d0e0e4739";
  const approved = await resume(
    second,
    "incident-g1",
    interruptId,
    { verdict: "approve" },
    { ...AUTH, traceparent: `00-${approveTrace}-50f067aa0ba902b7-01` },
  );
  expect(approved.status).toBe(202);
  const [verdict] = await receiver
    .waitForSpans((spans) => spans.some((span) => span.name === `gate verdict ${APPLY}`))
    .then((spans) => spans.filter((span) => span.name === `gate verdict ${APPLY}`));
  expect(verdict?.traceId).toBe(approveTrace);
  expect(verdict?.attributes["spar.gate.outcome"]).toBe("apply");
  expect(verdict?.links).toEqual([
    { traceId: injectTrace, spanId: park?.spanId ?? "?", attributes: { "spar.link": "gate-park" } },
  ]);
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
});
