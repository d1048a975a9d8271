/**
 * `daemonScope()`: the start, collect and clean-up plumbing integration tests share. Declared once
 * at the top of a test file, it starts daemons (test/support/daemon.ts), keeps what hangs on them
 * (event streams, provider fakes, watchers) and, after each test (or after the file, `per: "file"`),
 * closes those in reverse order and stops every daemon still running. `runToExit()` runs a process
 * that is expected to end (a startup refusal) and returns its exit code and output.
 */
import { afterAll, afterEach } from "bun:test";
import { type Daemon, type DaemonOptions, startDaemon } from "./daemon.ts";

export interface DaemonScope {
  /** Start a daemon stopped at the scope's end. */
  start(options?: DaemonOptions): Promise<Daemon>;
  /** Stop `daemon` at the scope's end (one started some other way). */
  adopt<T extends Daemon>(daemon: T): T;
  /** Run `cleanup` at the scope's end (close a stream, stop a fake); returns `value`. */
  defer<T>(value: T, cleanup: (value: T) => unknown): T;
  /** Clean up now what the scope holds, last in first out (what the scope's hook does). */
  close(): Promise<void>;
}

export interface DaemonScopeOptions {
  /** Clean up after each test (default) or once after the file. */
  per?: "test" | "file";
  /** How a daemon still running is stopped: SIGKILL (default, fastest) or SIGTERM (a clean shutdown). */
  stop?: "kill9" | "sigterm";
}

/** Declare at a test file's top level: registers the `afterEach` (or `afterAll`) that cleans up. */
export function daemonScope(options: DaemonScopeOptions = {}): DaemonScope {
  const held: Array<() => unknown> = [];
  const stop = async (daemon: Daemon): Promise<void> => {
    if (daemon.process.exitCode !== null || daemon.process.signalCode !== null) return;
    if (options.stop === "sigterm") await daemon.sigterm();
    else await daemon.kill9();
  };
  const close = async (): Promise<void> => {
    for (const cleanup of held.splice(0).reverse()) await cleanup();
  };
  (options.per === "file" ? afterAll : afterEach)(close);
  const adopt = <T extends Daemon>(daemon: T): T => {
    held.push(() => stop(daemon));
    return daemon;
  };
  return {
    start: async (startOptions) => adopt(await startDaemon(startOptions)),
    adopt,
    defer: (value, cleanup) => {
      held.push(() => cleanup(value));
      return value;
    },
    close,
  };
}

export interface ExitResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunToExitOptions {
  cwd?: string;
  /** Over process.env. */
  env?: Record<string, string | undefined>;
  /** Kill the process (and fail) when it has not exited after this long. */
  timeoutMs?: number;
}

/** Spawn `command`, wait for it to exit, and return its exit code and what it wrote. */
export async function runToExit(command: string[], options: RunToExitOptions = {}): Promise<ExitResult> {
  const child = Bun.spawn(command, {
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: { ...process.env, ...options.env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let timedOut = false;
  // Deadline: a command still running by then is killed and reported.
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, options.timeoutMs ?? 20_000);
  try {
    const [stdout, stderr, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    if (timedOut) throw new Error(`${command.join(" ")} did not exit in time; stderr:\n${stderr}`);
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}
