/**
 * The watchdog posture of svc's sessions (spec: `safety.watchdog` is the posture when `--watchdog`
 * is unset; D229): `--watchdog`, else the workload's `safety.watchdog`, else `feedback`. A
 * coordinator whose scripted model repeats one tool call five times (the watchdog's critical
 * signal) is halted and its turn cut only under `enforce`; under `feedback` and `warn` the signal
 * is recorded with its mode and the turn goes on.
 */
import { expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CommittedRow } from "../../../src/core/events.ts";
import { tempDir } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { injectIncident, storedRows } from "../../support/gated-workload.ts";
import { call, say, writeScript } from "../../support/scripted.ts";

const scope = daemonScope();

/** A coordinator workload with one specialist and, when given, `safety.watchdog`. */
function loopWorkload(watchdog?: string): string {
  const directory = tempDir("spar-loop-");
  mkdirSync(join(directory, "specialists"));
  writeFileSync(
    join(directory, "workload.yaml"),
    ["name: loop", "specialists:", "  - helper", ...(watchdog ? ["safety:", `  watchdog: ${watchdog}`] : []), ""].join(
      "\n",
    ),
  );
  writeFileSync(
    join(directory, "specialists", "helper.tmpl"),
    "---\ndescription: Helps.\ntools:\n  mcp: []\n---\nHelp, then call finish_task.\n",
  );
  return directory;
}

/** Run one incident whose model repeats `lookup` five times, then answers: the inject's answer, the coordinator's rows. */
async function loopingIncident(workload: string, args: string[] = []) {
  const script = writeScript([...Array.from({ length: 5 }, () => call("lookup", { q: "same" })), say("unstuck")]);
  const daemon = await scope.start({
    role: "svc",
    args: [`--workload=${workload}`, "--model=scripted", ...args],
    env: { SVC_SCRIPT: script },
  });
  const answer = await injectIncident(daemon, "w1", {});
  expect(await daemon.sigterm()).toBe(0);
  return { answer, rows: await storedRows(daemon.sessionDb, "svc", "incident-w1") };
}

const audits = (rows: CommittedRow[], name: string) =>
  rows.flatMap(({ event }) => (event.kind === "audit" && event.name === name ? [event.metadata] : []));
const trips = (rows: CommittedRow[]) => audits(rows, "guardrail-trip");
const signalModes = (rows: CommittedRow[]) => audits(rows, "watchdog-signal").map((metadata) => metadata.mode);

test("unset everywhere the posture is feedback: the loop is recorded, nothing halts, the turn answers", async () => {
  const { answer, rows } = await loopingIncident(loopWorkload());
  expect(answer.status).toBe(202);
  expect(trips(rows)).toEqual([]);
  expect(signalModes(rows)).toEqual(["feedback", "feedback"]);
  expect(JSON.stringify(rows)).toContain("unstuck");
}, 30_000);

test("the workload's safety.watchdog: enforce halts the session and cuts the turn", async () => {
  const { answer, rows } = await loopingIncident(loopWorkload("enforce"));
  expect(answer.status).toBe(409);
  expect(String(answer.body.error)).toContain("halted by the watchdog guardrail");
  expect(trips(rows)).toHaveLength(1);
  expect(trips(rows)[0]).toMatchObject({ guardrail: "watchdog", halted: true });
  expect(JSON.stringify(rows)).not.toContain("unstuck");
}, 30_000);

test("--watchdog wins over the workload's safety.watchdog", async () => {
  const { answer, rows } = await loopingIncident(loopWorkload("enforce"), ["--watchdog=warn"]);
  expect(answer.status).toBe(202);
  expect(trips(rows)).toEqual([]);
  expect(signalModes(rows)).toEqual(["warn", "warn"]);
}, 30_000);
