/**
 * `scripts/demo-triage`, the one-command local demo of the triage deployment, as a user runs it:
 * it exits 0 within two minutes having printed the INCIDENT SUMMARY and the alert the local
 * webhook received, after checking that the tools did what the summary says; a run that cannot
 * finish in time exits 1 with the reason; a bad argument exits 2. Everything it started is gone
 * afterwards (no daemon left listening).
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { REPO_ROOT } from "../../support/daemon.ts";

/** The uid the demo gives its failing pod (scripts/demo/triage.ts). */
const DEMO_POD_UID = "5d1c0b7e-3f2a-4c8e-9b61-2a7f0e4d9c13";

async function demo(...args: string[]) {
  const proc = Bun.spawn([join(REPO_ROOT, "scripts", "demo-triage"), ...args], {
    cwd: REPO_ROOT,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { stdout, stderr, code };
}

test("the demo prints the UNRESOLVED summary and the alert the webhook got, checks the tools did it, and exits 0", async () => {
  const started = Date.now();
  const { stdout, stderr, code } = await demo();
  expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
  expect(Date.now() - started).toBeLessThan(120_000);
  for (const check of [
    "ok: the first cluster call refused until a plan exists",
    "ok: the tool server read the pod",
    "ok: wait_and_verify saw the failure persist",
    "ok: the alert was delivered",
    "ok: the webhook got the page once",
  ])
    expect(stdout).toContain(check);
  expect(stdout).toContain("INCIDENT SUMMARY\n================\nStatus: UNRESOLVED");
  // The Incident line names the pod's uid, as the skill's template has it, and the page carries it.
  expect(stdout).toContain(`Incident: shop/web-6f7c9d-x2x7q (${DEMO_POD_UID})`);
  expect(stdout).toContain(`"uid": "${DEMO_POD_UID}"`);
  expect(stdout).toContain("alert received by the on-call webhook:");
  expect(stdout).toContain('"status": "UNRESOLVED"');
  // The page carries what the skill's Step 4 puts in it: the status first, the proposal, the evidence.
  expect(stdout).toContain('"summary": "UNRESOLVED ErrImagePull shop/web-6f7c9d-x2x7q: ');
  expect(stdout).toContain('"proposal": "set the workload');
  expect(stdout).toContain('"evidence": [');
  // Nothing it started is left: no spar process under this checkout still runs its scripted agent.
  const left = Bun.spawnSync(["pgrep", "-f", "spar-demo-triage-"]).stdout.toString().trim();
  expect(left).toBe("");
}, 150_000);

test("a run that cannot finish before its deadline exits 1 with the reason; a bad argument exits 2", async () => {
  const late = await demo("--deadline-s=0.5");
  expect(late.code).toBe(1);
  expect(late.stderr).toContain("demo-triage failed: timed out waiting for");
  const bad = await demo("--deadline-s=soon");
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("--deadline-s must be a positive number");
}, 60_000);
