/**
 * The write-gate tour of docs/svc.md, run as the page tells it: the example workload
 * (docs/examples/gated) and script (docs/examples/gate-tour.jsonl), an inject that parks, the
 * approval, and the one line the counting server wrote.
 */
import { expect, test } from "bun:test";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { countedCalls } from "../fixtures/mcp/counting.ts";
import { REPO_ROOT, tempDir } from "../support/daemon.ts";
import { daemonScope } from "../support/daemon-scope.ts";
import { injectIncident, resume } from "../support/gated-workload.ts";

const scope = daemonScope();

test("the gate tour parks apply_change(replicas=10), and one approval runs it once", async () => {
  const page = readFileSync(join(REPO_ROOT, "docs/svc.md"), "utf8");
  expect(page).toContain("--workload=docs/examples/gated");
  expect(page).toContain("SVC_SCRIPT=docs/examples/gate-tour.jsonl");
  const counts = join(tempDir(), "counts");
  mkdirSync(counts);
  const daemon = await scope.start({
    role: "svc",
    cwd: REPO_ROOT,
    args: ["--workload=docs/examples/gated", "--model=scripted"],
    env: {
      SVC_SCRIPT: "docs/examples/gate-tour.jsonl",
      SVC_INJECT_TOKEN: "gate-s3cret",
      COUNT_DIR: counts,
      SPAR_BUN: process.execPath,
    },
  });
  const injected = await injectIncident(daemon, "demo");
  expect(injected.body.state).toBe("paused");
  expect(injected.pending[0]?.message).toBe("Approve mutating call apply_change(replicas=10)?");
  const answered = await resume(daemon, "incident-demo", injected.pending[0]?.interrupt_id ?? "", {
    verdict: "approve",
    note: "go",
  });
  expect(answered.body).toMatchObject({ status: "resumed", outcome: "apply", state: "idle" });
  expect(countedCalls(counts, "apply_change").map((entry) => entry.args)).toEqual([{ replicas: 10 }]);
});
