/**
 * The process seal (D335): which variables stay in the initial environment, the byte formats, the
 * round trip in a real process (test/fixtures/seal/probe.ts seals itself and reports: same pid and
 * arguments, every variable back for process.env, a worker and a child, none of the moved ones in
 * its own /proc environ, not dumpable), and every way it can fail, in a real process (a marker
 * that names no seal file) and with a libc whose calls fail: the process runs on unsealed, with a
 * reason to warn.
 */
import { describe, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type { Libc } from "../../../src/daemon/libc.ts";
import { type SealIo, sealProcess, sealWarning } from "../../../src/daemon/process-seal.ts";
import {
  SEAL_MARKER,
  joinEntries,
  keptAtStart,
  markedFd,
  partitionEnvironment,
  splitArguments,
  splitAssignment,
  splitEntries,
} from "../../../src/daemon/sealed-environment.ts";
import { REPO_ROOT } from "../../support/daemon.ts";

const PROBE = join(REPO_ROOT, "test/fixtures/seal/probe.ts");
const asRoot = process.getuid?.() === 0;
const bytes = (text: string) => new Uint8Array(Buffer.from(text, "latin1"));
const text = (entries: Uint8Array[]) => entries.map((entry) => Buffer.from(entry).toString("latin1"));

describe("what stays in the initial environment", () => {
  test("the tools' default allow list and the runtime's start-up names stay", () => {
    for (const name of ["PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "BUN_JSC_useJIT", "NODE_EXTRA_CA_CERTS"])
      expect(keptAtStart(name)).toBe(true);
  });

  test("secrets, proxies (their URLs can hold credentials) and everything unknown move", () => {
    for (const name of [
      "SPAR_TOKEN",
      "AWS_SECRET_ACCESS_KEY",
      "ANTHROPIC_API_KEY",
      "NODE_AUTH_TOKEN",
      "HTTPS_PROXY",
      "http_proxy",
      "DATABASE_URL",
      "PATHX",
    ])
      expect(keptAtStart(name)).toBe(false);
  });

  test("a marker another spar left is dropped, the rest split by name", () => {
    const entries = ["PATH=/bin", "SPAR_TOKEN=t", `${SEAL_MARKER}=1:5`, "LANG=C"].map(bytes);
    const { kept, moved } = partitionEnvironment(entries);
    expect(text(kept)).toEqual(["PATH=/bin", "LANG=C"]);
    expect(text(moved)).toEqual(["SPAR_TOKEN=t"]);
  });
});

describe("byte formats", () => {
  test("entries round-trip through the seal file, bytes that are not UTF-8 and `=` in values included", () => {
    const entries = [bytes("A=x=y"), new Uint8Array([0x42, 0x3d, 0xff, 0xfe]), bytes("EMPTY=")];
    const back = splitEntries(joinEntries(entries));
    expect(back.map((entry) => [...entry])).toEqual(entries.map((entry) => [...entry]));
    expect(splitAssignment(back[0] as Uint8Array).name).toBe("A");
    expect([...splitAssignment(back[0] as Uint8Array).value]).toEqual([...bytes("x=y")]);
    expect([...splitAssignment(back[1] as Uint8Array).value]).toEqual([0xff, 0xfe]);
  });

  test("the command line keeps empty arguments", () => {
    expect(text(splitArguments(bytes("spar\0agent\0\0--x\0")))).toEqual(["spar", "agent", "", "--x"]);
  });

  test("the marker counts only for the process it was set for", () => {
    expect(markedFd("42:7", 42)).toBe(7);
    expect(markedFd("41:7", 42)).toBeUndefined();
    expect(markedFd("42", 42)).toBeUndefined();
    expect(markedFd(undefined, 42)).toBeUndefined();
  });
});

interface ProbeReport {
  result: { state: string; reason?: string; dumpable: boolean };
  pid: number;
  argv: string[];
  env: string | null;
  marker: string | null;
  worker: string | null;
  child: string;
  environ: string;
  dumpable: number;
}

/** Runs the probe (through `prefix`, a command that executes it in its own place) and parses its report. */
async function probe(env: Record<string, string | undefined>, args: string[], prefix: string[] = []) {
  const child = Bun.spawn([...prefix, process.execPath, PROBE, ...args], {
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  return { pid: child.pid, report: JSON.parse(stdout) as ProbeReport };
}

describe("in a real process", () => {
  test("sealed: same pid and arguments, every variable back everywhere, none in its own environ, not dumpable", async () => {
    const secret = `seal-${randomUUID()}`;
    const { pid, report } = await probe({ ...process.env, SEAL_PROBE_SECRET: secret }, ["one", "two words", ""]);
    expect(report.result).toEqual({ state: "sealed", dumpable: false });
    expect(report.pid).toBe(pid);
    expect(report.argv).toEqual(["one", "two words", ""]);
    expect({ env: report.env, worker: report.worker, child: report.child, marker: report.marker }).toEqual({
      env: secret,
      worker: secret,
      child: secret,
      marker: null,
    });
    expect(report.dumpable).toBe(0);
    expect(report.environ).not.toContain(secret);
    // Root reads its own environ (the marker is the only addition); anyone else cannot, not dumpable.
    if (asRoot) expect(report.environ).toMatch(new RegExp(`(^|\\0)${SEAL_MARKER}=${pid}:\\d+\\0`));
    else expect(report.environ).toBe("unreadable: EACCES");
  });

  test("nothing to move: not started again, still not dumpable", async () => {
    const { report } = await probe({ PATH: process.env.PATH, HOME: process.env.HOME }, []);
    expect(report.result).toEqual({ state: "clean", dumpable: false });
  });

  test("a marker that names no seal file: runs on unsealed with a reason, every variable where it was", async () => {
    const secret = `seal-${randomUUID()}`;
    // exec keeps the pid, so the marker names this very process; its descriptor 0 is no memory file.
    const marked = ["bash", "-c", `exec env ${SEAL_MARKER}=$$:0 "$@"`, "seal-probe"];
    const { pid, report } = await probe({ ...process.env, SEAL_PROBE_SECRET: secret }, [], marked);
    expect(report.result).toEqual({
      state: "open",
      reason: "the marker names descriptor 0, which is not the seal's memory file",
      dumpable: false,
    });
    expect({ env: report.env, worker: report.worker, marker: report.marker }).toEqual({
      env: secret,
      worker: secret,
      marker: null,
    });
    if (asRoot) expect(report.environ).toContain(`SEAL_PROBE_SECRET=${secret}`);
    expect(sealWarning(report.result as never, pid)).toBe(
      `environment not sealed (the marker names descriptor 0, which is not the seal's memory file): its variables, secrets included, stay in /proc/${pid}/environ, readable by root (CAP_SYS_PTRACE)`,
    );
  });
});

/** A libc whose calls succeed unless told otherwise; records what was called. */
function fakeLibc(fail: { memfd?: boolean; execve?: boolean; prctl?: boolean } = {}) {
  const calls: string[] = [];
  let dumpable = 1;
  const libc: Libc = {
    memfdCreate: () => (calls.push("memfd"), fail.memfd ? -1 : 9),
    execve: (path) => (calls.push(`execve ${path}`), -1),
    setenv: () => 0,
    unsetenv: () => 0,
    setDumpable: (on) => {
      calls.push(`dumpable ${on}`);
      if (fail.prctl) return -1;
      dumpable = on ? 1 : 0;
      return 0;
    },
    dumpable: () => dumpable,
    executedPath: () => "/usr/bin/spar",
    errno: () => (fail.memfd ? 24 : 8),
  };
  return { libc, calls };
}

function fakeIo(libc: Libc | undefined, overrides: Partial<SealIo> = {}): SealIo & { closed: number[] } {
  const closed: number[] = [];
  const files: Record<string, string> = {
    "/proc/self/environ": "PATH=/bin\0SPAR_TOKEN=t\0",
    "/proc/self/cmdline": "spar\0agent\0",
  };
  return {
    libc,
    pid: 42,
    env: {},
    readFile: (path) => bytes(files[path] ?? ""),
    readDescriptor: () => new Uint8Array(),
    writeDescriptor: () => undefined,
    closeDescriptor: (fd) => closed.push(fd),
    describeDescriptor: () => undefined,
    isOwnExecutable: () => true,
    closed,
    ...overrides,
  };
}

describe("when a step fails the process runs on, unsealed, with a reason", () => {
  test("execve fails: the memory file is closed, the process made non-dumpable", () => {
    const { libc, calls } = fakeLibc();
    const io = fakeIo(libc);
    expect(sealProcess(io)).toEqual({
      state: "open",
      reason: "execve of /usr/bin/spar failed (errno 8)",
      dumpable: false,
    });
    expect(io.closed).toEqual([9]);
    expect(calls).toEqual(["memfd", "execve /usr/bin/spar", "dumpable false"]);
  });

  test("the path it was started by leads elsewhere now: /proc/self/exe is executed", () => {
    const { libc, calls } = fakeLibc();
    sealProcess(fakeIo(libc, { isOwnExecutable: () => false }));
    expect(calls).toContain("execve /proc/self/exe");
  });

  test("memfd_create fails", () => {
    const { libc } = fakeLibc({ memfd: true });
    expect(sealProcess(fakeIo(libc))).toEqual({
      state: "open",
      reason: "memfd_create failed (errno 24)",
      dumpable: false,
    });
  });

  test("/proc cannot be read", () => {
    const { libc } = fakeLibc();
    const io = fakeIo(libc, {
      readFile: () => {
        throw new Error("ENOENT: no such file or directory");
      },
    });
    expect(sealProcess(io)).toEqual({
      state: "open",
      reason: "cannot read /proc/self: ENOENT: no such file or directory",
      dumpable: false,
    });
  });

  test("no libc (not Linux): nothing is called, the warning says every process of the user can read it", () => {
    const result = sealProcess(fakeIo(undefined));
    expect(result).toEqual({ state: "open", reason: "no libc to call (not Linux?)", dumpable: true });
    expect(sealWarning(result, 42)).toBe(
      "environment not sealed (no libc to call (not Linux?)): its variables, secrets included, stay in /proc/42/environ, readable by every process of this user and root",
    );
  });

  test("sealed but prctl refused: the warning names the memory", () => {
    const { libc } = fakeLibc({ prctl: true });
    const io = fakeIo(libc, {
      env: { [SEAL_MARKER]: "42:9" },
      describeDescriptor: () => "/memfd:spar-env (deleted)",
      readDescriptor: () => bytes("SPAR_TOKEN=t\0"),
    });
    const result = sealProcess(io);
    expect(result).toEqual({ state: "sealed", dumpable: true });
    expect(io.env).toEqual({ SPAR_TOKEN: "t" });
    expect(io.closed).toEqual([9]);
    expect(sealWarning(result, 42)).toBe(
      "could not make the process non-dumpable: its memory (/proc/42/mem) stays readable by every process of this user and root",
    );
  });

  test("a sealed start with nothing to warn about", () => {
    expect(sealWarning({ state: "sealed", dumpable: false }, 42)).toBeUndefined();
    expect(sealWarning({ state: "clean", dumpable: false }, 42)).toBeUndefined();
  });
});
