/**
 * Bounded dispatch end to end (reference 1.7): svc runs the workload's one SingleTurn specialist
 * once on the incident; its reply is validated against the output_schema. Valid: 202 with the
 * result, recorded as a `dispatch-result` row. Invalid: 502 naming the violation, the reply kept
 * in a `valid: false` row. Scripted model, real daemon.
 */
import { expect, test } from "bun:test";
import { daemonScope } from "../../support/daemon-scope.ts";
import { injectIncident } from "../../support/gated-workload.ts";
import { say } from "../../support/scripted.ts";
import { auditRows, shapeDaemonOptions, shapeWorkload, storedEvents } from "../../support/shape-workload.ts";

const scope = daemonScope();

const SCHEMA = {
  type: "object",
  properties: {
    severity: { type: "string", enum: ["low", "high"] },
    reasons: { type: "array", items: { type: "string" } },
  },
  required: ["severity"],
};

function boundedWorkload(): string {
  return shapeWorkload(
    ["name: verdict", "dispatch: bounded", "specialists:", "  - judge"],
    {
      judge: {
        front: ["mode: SingleTurn", "output_schema: ../verdict.json"],
        instruction: "Rate the incident. Answer with JSON only.",
      },
    },
    { "verdict.json": JSON.stringify(SCHEMA) },
  );
}

test("a reply satisfying the output_schema is answered 202 with the result and recorded; one model call", async () => {
  const daemon = await scope.start(
    shapeDaemonOptions(boundedWorkload(), [say('{"severity":"high","reasons":["disk full"]}')]),
  );
  const injected = await injectIncident(daemon, "b1");
  expect(injected.status).toBe(202);
  expect(injected.body).toMatchObject({
    status: "accepted",
    state: "idle",
    pending: [],
    result: { specialist: "judge", output: { severity: "high", reasons: ["disk full"] } },
  });
  await daemon.sigterm();
  const coordinator = await storedEvents(daemon.sessionDb, "svc", "incident-b1");
  expect(auditRows(coordinator, "dispatch-result")).toEqual([
    {
      shape: "bounded",
      specialist: "judge",
      schema: expect.stringMatching(/verdict\.json$/),
      valid: true,
      result: { severity: "high", reasons: ["disk full"] },
    },
  ]);
  // The coordinator never asks the model; the judge asked it once.
  expect(coordinator.filter((event) => event.kind === "model-response")).toHaveLength(0);
  const judge = await storedEvents(daemon.sessionDb, "svc.judge", "incident-b1");
  expect(judge.filter((event) => event.kind === "model-response")).toHaveLength(1);
  expect(judge.find((event) => event.kind === "user-message")).toMatchObject({
    text: expect.stringContaining("INJECT"),
  });
});

test("a reply in one code fence is read inside it", async () => {
  const daemon = await scope.start(shapeDaemonOptions(boundedWorkload(), [say('```json\n{"severity":"low"}\n```')]));
  const injected = await injectIncident(daemon, "b2");
  expect(injected.status).toBe(202);
  expect(injected.body.result).toEqual({ specialist: "judge", output: { severity: "low" } });
});

test("a reply breaking the output_schema is a 502 naming the violation, and the reply is kept", async () => {
  const daemon = await scope.start(
    shapeDaemonOptions(boundedWorkload(), [say('{"severity":"medium"}'), say("It looks bad to me.")]),
  );
  const invalid = await injectIncident(daemon, "b3");
  expect(invalid.status).toBe(502);
  expect(String(invalid.body.error)).toBe(
    "judge's reply does not satisfy its output_schema verdict.json: reply/severity must be equal to one of the allowed values",
  );
  const prose = await injectIncident(daemon, "b4");
  expect(prose.status).toBe(502);
  expect(String(prose.body.error)).toContain(
    "judge's reply does not satisfy its output_schema verdict.json: the reply is not JSON",
  );
  await daemon.sigterm();
  const rows = auditRows(await storedEvents(daemon.sessionDb, "svc", "incident-b3"), "dispatch-result");
  expect(rows).toEqual([
    expect.objectContaining({
      valid: false,
      reply: '{"severity":"medium"}',
      problem: "reply/severity must be equal to one of the allowed values",
    }),
  ]);
  const failures = auditRows(await storedEvents(daemon.sessionDb, "svc", "incident-b3"), "turn-error");
  expect(failures).toEqual([expect.objectContaining({ code: "UNUSABLE_REPLY" })]);
});
