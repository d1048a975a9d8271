/**
 * The svc coordinator's `call_a2a`: offered and allowed only while the workload knows a remote
 * agent, and never when a specialist already has that name (the coordinator's tools hold each
 * name once; the specialist keeps it).
 */
import { expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CALL_A2A } from "../../../../src/a2a-client/call-a2a-tool.ts";
import { staticDirectory } from "../../../../src/a2a-client/remote-agent-directory.ts";
import { AgentRoster } from "../../../../src/svc/dispatch/agent-roster.ts";
import { loadWorkload } from "../../../../src/svc/workload/load-workload.ts";
import type { Workload } from "../../../../src/svc/workload/workload.ts";
import { tempDir } from "../../../support/daemon.ts";

function workloadWith(specialist: string): Workload {
  const directory = tempDir("spar-roster-a2a-");
  mkdirSync(join(directory, "specialists"));
  writeFileSync(join(directory, "workload.yaml"), `name: caller\ndescription: x\nspecialists: [${specialist}]\n`);
  writeFileSync(
    join(directory, "specialists", `${specialist}.tmpl`),
    "---\ndescription: helps\nmode: Task\ncapability: read_only\n---\nHelp.\n",
  );
  const loaded = loadWorkload({ value: directory, cwd: directory, env: {}, wireToolServers: false });
  if (!loaded.ok) throw new Error(loaded.error);
  return loaded.value.workload;
}

const remote = staticDirectory([{ name: "echo", description: "x", timeoutMs: 1000, source: "a2a/echo.yaml" }]);

test("the coordinator is offered call_a2a and may call it only while a remote agent is known", () => {
  const withAgents = new AgentRoster(workloadWith("helper"), "svc", () => undefined, remote);
  expect(withAgents.tools(withAgents.coordinator).map((spec) => spec.name)).toEqual(["helper", CALL_A2A]);
  expect(withAgents.allows(withAgents.coordinator, CALL_A2A)).toBe(true);
  const helper = withAgents.specialist("helper");
  if (helper === undefined) throw new Error("no helper");
  expect(withAgents.allows(helper, CALL_A2A)).toBe(false);
  const without = new AgentRoster(workloadWith("helper"), "svc", () => undefined);
  expect(without.tools(without.coordinator).map((spec) => spec.name)).toEqual(["helper"]);
  expect(without.allows(without.coordinator, CALL_A2A)).toBe(false);
  const empty = new AgentRoster(workloadWith("helper"), "svc", () => undefined, staticDirectory([]));
  expect(empty.callsRemote(CALL_A2A)).toBe(false);
});

test("a specialist named call_a2a keeps the name: the coordinator's tools hold it once, as the delegation", () => {
  const roster = new AgentRoster(workloadWith(CALL_A2A), "svc", () => undefined, remote);
  expect(roster.tools(roster.coordinator).map((spec) => spec.name)).toEqual([CALL_A2A]);
  expect(roster.callsRemote(CALL_A2A)).toBe(false);
  expect(roster.allows(roster.coordinator, CALL_A2A)).toBe(true);
});
