/**
 * Fan-out dispatch end to end (reference 1.7, 3.5 c): the analysts run on the incident as
 * sessions of their own, at most `fanout.max_concurrency` at once; `_synthesis` merges the
 * reports it is given; with `hitl.require_approval` the merged report parks as
 * `approve-_synthesis` ("from R of T analysts"). Concurrency is read from the stored rows: each
 * analyst's model call stalls, and its prompt row and its model-response row bound its run.
 * Scripted model (one cursor for the process, so the analysts' lines are identical), real daemon.
 */
import { expect, test } from "bun:test";
import type { SessionEvent } from "../../../src/core/events.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { injectIncident, resume } from "../../support/gated-workload.ts";
import { call, failWith } from "../../support/scripted.ts";
import { auditRows, shapeDaemonOptions, shapeWorkload, storedEvents } from "../../support/shape-workload.ts";

const scope = daemonScope();
const ANALYSTS = ["logs", "metrics", "traces"];

function fanoutWorkload(maxConcurrency: number): string {
  const readOnly = { front: ["tools:", "  mcp: []"] };
  return shapeWorkload(
    [
      "name: review-fanout",
      "dispatch: fanout",
      "fanout:",
      `  max_concurrency: ${maxConcurrency}`,
      "specialists:",
      ...ANALYSTS.map((name) => `  - ${name}`),
      "  - _synthesis",
      "hitl:",
      "  require_approval: true",
    ],
    { logs: readOnly, metrics: readOnly, traces: readOnly, _synthesis: readOnly },
  );
}

/** An analyst's model call: stalls, then finishes with a report. */
const slowReport = (delayMs: number) => ({
  request: {},
  responses: [
    {
      delayMs,
      content: {
        role: "model",
        parts: [{ functionCall: { name: "finish_task", args: { result: "nothing unusual" } } }],
      },
      turnComplete: true,
    },
  ],
});

/** When an analyst's run started (its prompt row) and ended (its model response). */
async function span(sessionDb: string, analyst: string, id: string): Promise<{ start: number; end: number }> {
  const events: SessionEvent[] = await storedEvents(sessionDb, `svc.${analyst}`, id);
  const start = events.find((event) => event.kind === "user-message");
  const end = events.find((event) => event.kind === "model-response");
  if (start === undefined || end === undefined) throw new Error(`${analyst} did not run`);
  return { start: Date.parse(start.ts), end: Date.parse(end.ts) };
}

test("three analysts, two at a time, then _synthesis merges their reports and the report parks as approve-_synthesis", async () => {
  const lines = [...ANALYSTS.map(() => slowReport(400)), call("finish_task", { result: "all quiet" })];
  const daemon = await scope.start(shapeDaemonOptions(fanoutWorkload(2), lines));
  const injected = await injectIncident(daemon, "f1");
  expect(injected.status).toBe(202);
  expect(injected.body).toMatchObject({
    state: "paused",
    pending: [
      {
        interrupt_id: "approve-_synthesis",
        agent: "_synthesis",
        message: 'Approve merged report from 3 of 3 analysts? Result: {"result":"all quiet"}',
      },
    ],
    result: { specialist: "_synthesis", output: { result: "all quiet" } },
  });
  const approved = await resume(daemon, "incident-f1", "approve-_synthesis", { approved: true });
  expect(approved.body).toMatchObject({ outcome: "result_approved", state: "idle", pending: [] });
  await daemon.sigterm();

  const spans: Array<{ start: number; end: number }> = [];
  for (const analyst of ANALYSTS) spans.push(await span(daemon.sessionDb, analyst, "incident-f1"));
  const overlapping = (at: number) => spans.filter((run) => run.start <= at && at < run.end).length;
  // Two ran at once, never three.
  expect(Math.max(...spans.map((run) => overlapping(run.start)))).toBe(2);
  const synthesis = await storedEvents(daemon.sessionDb, "svc._synthesis", "incident-f1");
  const prompt = synthesis.find((event) => event.kind === "user-message");
  const text = prompt?.kind === "user-message" ? prompt.text : "";
  expect(text).toContain("ANALYST REPORTS (3 of 3 analysts reported):");
  for (const analyst of ANALYSTS) expect(text).toContain(`- ${analyst}: {"result":"nothing unusual"}`);
  const coordinator = await storedEvents(daemon.sessionDb, "svc", "incident-f1");
  expect(auditRows(coordinator, "dispatch-branch").map((row) => [row.specialist, row.reported])).toEqual(
    ANALYSTS.map((analyst) => [analyst, true]),
  );
});

test("with max_concurrency 1 the analysts run one after another; a failed analyst leaves R of T", async () => {
  const lines = [
    failWith("INVALID_ARGUMENT", "analyst model refused"),
    slowReport(200),
    slowReport(200),
    call("finish_task", { result: "two reports agree" }),
  ];
  const daemon = await scope.start(shapeDaemonOptions(fanoutWorkload(1), lines));
  const injected = await injectIncident(daemon, "f2");
  expect(injected.status).toBe(202);
  expect(injected.pending[0]?.message).toBe(
    'Approve merged report from 2 of 3 analysts? Result: {"result":"two reports agree"}',
  );
  await daemon.sigterm();
  const metrics = await span(daemon.sessionDb, "metrics", "incident-f2");
  const traces = await span(daemon.sessionDb, "traces", "incident-f2");
  expect(traces.start).toBeGreaterThanOrEqual(metrics.end);
  const coordinator = await storedEvents(daemon.sessionDb, "svc", "incident-f2");
  expect(auditRows(coordinator, "dispatch-branch")[0]).toMatchObject({
    specialist: "logs",
    reported: false,
    error: expect.stringContaining("specialist logs:"),
  });
  const synthesis = await storedEvents(daemon.sessionDb, "svc._synthesis", "incident-f2");
  expect(synthesis.find((event) => event.kind === "user-message")).toMatchObject({
    text: expect.stringContaining("- logs: no report (specialist logs:"),
  });
});

test("when no analyst reports, the run fails without asking _synthesis", async () => {
  const lines = ANALYSTS.map(() => failWith("INVALID_ARGUMENT", "refused"));
  const daemon = await scope.start(shapeDaemonOptions(fanoutWorkload(4), lines));
  const injected = await injectIncident(daemon, "f3");
  expect(injected.status).toBe(500);
  expect(String(injected.body.error)).toContain("no analyst reported, so _synthesis did not run");
  await daemon.sigterm();
  expect(await storedEvents(daemon.sessionDb, "svc._synthesis", "incident-f3")).toEqual([]);
});
