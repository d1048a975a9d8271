/**
 * A `bash` tool command reading the daemon's secrets from /proc (D335): the command runs as the
 * daemon's user with the daemon as its $PPID, so an unsealed daemon shows the attach token, the
 * cloud keys and every other variable it was started with in /proc/$PPID/environ, whatever the
 * tools' allow list. Each daemon here gets unique secret values in its own environment only (never
 * this test process's), a scripted model runs the attacks as bash calls, and the outputs must not
 * hold the secrets. Controls show each attack read what it claims to (the daemon's environ
 * as root, a probe variable that stays in it) and that the daemon still has every variable (the
 * token still guards the listener, a passed-through variable still reaches bash). Without
 * CAP_SYS_PTRACE (any other user, or root in a default container) the daemon's environ and
 * memory cannot even be opened: it is not dumpable. Root with CAP_SYS_PTRACE still reads the
 * daemon's memory (D336): that is documented, not tested as a promise.
 */
import { expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { chownSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUILD_TIMEOUT_MS, copiedBinary } from "../support/compiled-binary.ts";
import { daemonScope } from "../support/daemon-scope.ts";
import { type Daemon, type DaemonOptions, postJson, tempDir } from "../support/daemon.ts";
import { call, say, toolResults } from "../support/scripted.ts";
import { collect } from "../support/sse-client.ts";

const scope = daemonScope({ per: "file" });
const asRoot = process.getuid?.() === 0;
/** The unprivileged user a root test runs a daemon as. */
const NOBODY = 65534;

/** The attacks, in the order the scripted model calls them. */
const PPID_ENVIRON = "tr '\\0' '\\n' < /proc/$PPID/environ";
const SCAN_ALL =
  "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\" 2>/dev/null" +
  " | grep -E '^(SPAR_TOKEN|AWS_SECRET_ACCESS_KEY|LC_SPAR_PROBE)=' | sed \"s|^|$f |\"; done; true";
const OPEN_MEM = ': < /proc/$PPID/mem && echo "mem opened"';
const PASSED = 'printf %s "$SPAR_PROBE_PASSED"';

interface Attacked {
  daemon: Daemon;
  token: string;
  aws: string;
  probe: string;
  passed: string;
  outputs: Array<{ stdout: string; stderr: string }>;
}

/** How the daemon is started: through a prefix command, from the binary, in a directory its user owns. */
type Launch = Pick<DaemonOptions, "prefix" | "binary" | "cwd" | "sessionDb" | "env">;

/** Starts a daemon with fresh secrets, runs the four attacks in one turn, returns their outputs. */
async function attack(launch: Launch = {}, dir = tempDir("spar-proc-environ-")): Promise<Attacked> {
  const values = {
    token: `tok-${randomUUID()}`,
    aws: `aws-${randomUUID()}`,
    probe: `probe-${randomUUID()}`,
    passed: `passed-${randomUUID()}`,
  };
  const script = join(dir, "script.jsonl");
  const lines = [PPID_ENVIRON, SCAN_ALL, OPEN_MEM, PASSED].map((command) => call("bash", { command }));
  writeFileSync(script, [...lines, say("done")].map((line) => `${JSON.stringify(line)}\n`).join(""));
  const tools = join(dir, "tools");
  mkdirSync(tools);
  const daemon = await scope.start({
    ...launch,
    args: [
      "--model=scripted",
      `--script=${script}`,
      "--permission-mode=yolo",
      `--tools-root=${tools}`,
      "--attach-token=SPAR_TOKEN",
      "--tools-env-passthrough=SPAR_PROBE_PASSED",
    ],
    env: {
      ...launch.env,
      SPAR_TOKEN: values.token,
      AWS_SECRET_ACCESS_KEY: values.aws,
      LC_SPAR_PROBE: values.probe,
      SPAR_PROBE_PASSED: values.passed,
    },
  });
  const headers = { authorization: `Bearer ${values.token}` };
  const events = scope.defer(collect(`${daemon.baseUrl}/sessions/default/events`, { headers }), (stream) =>
    stream.close(),
  );
  await events.waitFor((frame) => frame.event === "usage-update");
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "go" }, headers)).status).toBe(200);
  const end = await events.waitFor((frame) => frame.event === "turn-complete" || frame.event === "turn-error", 20_000);
  expect(end.event).toBe("turn-complete");
  const outputs = toolResults(events).map((result) => ({
    stdout: String(result.response.stdout),
    stderr: String(result.response.stderr),
  }));
  expect(outputs).toHaveLength(4);
  return { daemon, ...values, outputs };
}

/** No attack's output holds a secret; the daemon still has them (passed through to bash, the token still asked for). */
async function expectSealed(run: Attacked): Promise<void> {
  for (const output of run.outputs.slice(0, 3)) {
    const text = `${output.stdout}\n${output.stderr}`;
    expect(text).not.toContain(run.token);
    expect(text).not.toContain(run.aws);
  }
  // bash's own environment is in the scan: it covered the tools' processes too.
  expect(run.outputs[1]?.stdout).toContain(`LC_SPAR_PROBE=${run.probe}`);
  // A variable that left the initial environment still reaches bash when passed through...
  expect(run.outputs[3]?.stdout).toBe(run.passed);
  // ...and the token still guards the listener.
  const status = `${run.daemon.baseUrl}/sessions/default/status`;
  expect((await fetch(status)).status).toBe(401);
  expect((await fetch(status, { headers: { authorization: `Bearer ${run.token}` } })).status).toBe(200);
}

/** The attack could not open the daemon's environ nor its memory. */
function expectRefused(run: Attacked): void {
  const [ppid, scan, mem] = run.outputs;
  expect(ppid?.stderr).toContain("Permission denied");
  expect(ppid?.stdout).toBe("");
  expect(scan?.stdout).not.toContain(`/proc/${run.daemon.process.pid}/environ`);
  expect(mem?.stderr).toContain("Permission denied");
  expect(mem?.stdout).not.toContain("mem opened");
}

test("the default daemon: /proc/$PPID/environ and a scan of every /proc/*/environ show no secret", async () => {
  const run = await attack();
  await expectSealed(run);
  if (asRoot) {
    // Root reads any environ: the attack did read the daemon's, which keeps only harmless variables.
    expect(run.outputs[0]?.stdout).toContain(`LC_SPAR_PROBE=${run.probe}`);
    expect(run.outputs[0]?.stdout).toMatch(/^SPAR_SEALED_ENV=\d+:\d+$/m);
    expect(run.outputs[1]?.stdout).toContain(`/proc/${run.daemon.process.pid}/environ LC_SPAR_PROBE=${run.probe}`);
  } else expectRefused(run);
});

test(
  "the binary run by a user without privileges (nobody, when the test is root): environ and memory refused to its tools",
  async () => {
    // A directory the daemon's user owns, holding the binary, the store, the workspace and its HOME.
    const dir = tempDir("spar-proc-environ-user-");
    const binary = await copiedBinary(dir);
    if (asRoot) chownSync(dir, NOBODY, NOBODY);
    const drop = ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "--"];
    const run = await attack(
      { binary, cwd: dir, sessionDb: join(dir, "sessions.db"), env: { HOME: dir }, prefix: asRoot ? drop : [] },
      dir,
    );
    await expectSealed(run);
    expectRefused(run);
    // Started again by the path it was started by: its name stays `spar`.
    expect(readFileSync(`/proc/${run.daemon.process.pid}/comm`, "utf8").trim()).toBe("spar");
  },
  BUILD_TIMEOUT_MS,
);

test("root without CAP_SYS_PTRACE (a default container): the daemon's memory is refused, its environ holds no secret", async () => {
  // As root, drop CAP_SYS_PTRACE from the daemon and everything it starts; as anyone else the tools never had it.
  const run = await attack(asRoot ? { prefix: ["setpriv", "--bounding-set=-sys_ptrace", "--"] } : {});
  await expectSealed(run);
  const [ppid, , mem] = run.outputs;
  // Kernels differ on whether root without CAP_SYS_PTRACE may open a non-dumpable process's
  // environ (Linux 6.18 lets it); either way it holds no secret.
  expect(ppid?.stderr.includes("Permission denied") || ppid?.stdout.includes(`LC_SPAR_PROBE=${run.probe}`)).toBe(true);
  expect(mem?.stderr).toContain("Permission denied");
  expect(mem?.stdout).not.toContain("mem opened");
});

test("control: a daemon that could not seal itself warns, serves, and as root its secrets are there to read", async () => {
  // exec keeps the pid, so the marker names the daemon itself; its descriptor 0 is no seal file.
  const run = await attack({ prefix: ["bash", "-c", 'exec env SPAR_SEALED_ENV=$$:0 "$@"', "spar-unsealed"] });
  expect(run.daemon.log()).toContain("environment not sealed (the marker names descriptor 0");
  expect(run.outputs[3]?.stdout).toBe(run.passed);
  const [ppid, , mem] = run.outputs;
  // Root reads a non-dumpable process's environ: the attack is real once the seal is missing.
  if (asRoot) expect(ppid?.stdout).toContain(`SPAR_TOKEN=${run.token}`);
  else {
    expect(ppid?.stderr).toContain("Permission denied");
    expect(mem?.stderr).toContain("Permission denied");
  }
});
