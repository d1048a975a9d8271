/**
 * Test harness: starts a real `spar agent` process (from source, or a compiled binary) on
 * port 0, reads the bound port back from its log, and stops it with SIGTERM or SIGKILL.
 */
import { join, resolve } from "node:path";
import { makeTempDir } from "./temp-dirs.ts";

export const REPO_ROOT = resolve(import.meta.dir, "../..");
export const MAIN = join(REPO_ROOT, "src/main.ts");

/** The command line of `spar <args>` run from source, as the tests spawn it. */
export function sparCommand(...args: string[]): string[] {
  return [process.execPath, MAIN, ...args];
}

export interface DaemonOptions {
  /** Which daemon: `spar agent` (its attach listener) or `spar svc` (its main listener). Default agent. */
  role?: "agent" | "svc";
  /** Listen address; default 127.0.0.1:0 (the port is read back). */
  listen?: string;
  /** Extra flags after `agent`. */
  args?: string[];
  /** Store file; defaults to a fresh temp dir's sessions.db; null passes no --session-db (the config file's). */
  sessionDb?: string | null;
  /** Run this executable instead of `bun src/main.ts`. */
  binary?: string;
  /** A command that executes the daemon in its own place (e.g. `setpriv` dropping a capability): the pid stays the daemon's. */
  prefix?: string[];
  cwd?: string;
  /** Over process.env; `undefined` unsets a variable (a default the daemon reads when it is absent). */
  env?: Record<string, string | undefined>;
  /** Stop waiting for the listen line after this long. */
  startTimeoutMs?: number;
}

export interface Daemon {
  readonly baseUrl: string;
  readonly port: number;
  readonly sessionDb: string;
  readonly process: Bun.Subprocess<"ignore", "pipe", "pipe">;
  /** Everything written to stderr so far. */
  log(): string;
  sigterm(): Promise<number>;
  kill9(): Promise<void>;
}

/** A fresh temp directory, removed after the test file (test/support/temp-dirs.ts). */
export function tempDir(prefix = "spar-test-"): string {
  return makeTempDir(prefix);
}

export async function startDaemon(options: DaemonOptions = {}): Promise<Daemon> {
  const sessionDb = options.sessionDb ?? join(tempDir(), "sessions.db");
  // As scripts/spar runs it: Bun's header limit above the daemon's own (a JSON 431).
  const command = options.binary ? [options.binary] : [process.execPath, "--max-http-header-size=65536", MAIN];
  const child = Bun.spawn(
    [
      ...(options.prefix ?? []),
      ...command,
      options.role ?? "agent",
      `--${options.role === "svc" ? "listen" : "attach-listen"}=${options.listen ?? "127.0.0.1:0"}`,
      ...(options.sessionDb === null ? [] : [`--session-db=${sessionDb}`]),
      ...(options.args ?? []),
    ],
    {
      cwd: options.cwd ?? REPO_ROOT,
      env: withoutUnset({ ...process.env, ...options.env }),
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  let stderr = "";
  const decoder = new TextDecoder();
  const port = await new Promise<number>((resolvePort, reject) => {
    // Deadline: a daemon that has not logged its port by then failed to start.
    const timer = setTimeout(
      () => reject(new Error(`daemon did not start in time; log:\n${stderr}`)),
      options.startTimeoutMs ?? 20_000,
    );
    (async () => {
      for await (const chunk of child.stderr) {
        stderr += decoder.decode(chunk, { stream: true });
        const match = /listening on https?:\/\/[^:]+:(\d+)/.exec(stderr);
        if (match) {
          clearTimeout(timer);
          resolvePort(Number(match[1]));
        }
      }
      clearTimeout(timer);
      reject(new Error(`daemon exited before listening (code ${await child.exited}); log:\n${stderr}`));
    })().catch(reject);
  });
  // Keep draining stderr so the child never blocks on a full pipe.
  (async () => {
    try {
      for await (const chunk of child.stderr) stderr += decoder.decode(chunk, { stream: true });
    } catch {
      // process gone
    }
  })();
  return {
    baseUrl: `${/listening on https:/.test(stderr) ? "https" : "http"}://127.0.0.1:${port}`,
    port,
    sessionDb,
    process: child,
    log: () => stderr,
    sigterm: async () => {
      child.kill("SIGTERM");
      return await child.exited;
    },
    kill9: async () => {
      child.kill("SIGKILL");
      await child.exited;
    },
  };
}

/** An environment with the variables set to `undefined` left out. */
function withoutUnset(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

/** POST JSON with the media type every write needs. */
export function postJson(url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
}

/** Poll until `check` returns a value (not undefined) or the deadline passes. */
export async function waitFor<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
  what = "condition",
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    // Poll: the one interval behind every waitFor.
    await Bun.sleep(20);
  }
}
