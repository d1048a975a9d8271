/**
 * MCP stdio transport over Bun.spawn (runs inside the tool-host worker): newline-delimited JSON-RPC
 * on the child's stdin/stdout, the child in its own process group so a stop reaches whatever it
 * started. `stop(graceMs)` is the daemon's teardown step (docs/agent.md#stopping): SIGTERM to the
 * group, wait up to the grace, then SIGKILL. The SDK's own stdio transport closes stdin and waits
 * 2 s before its SIGTERM, and does not expose the exit, hence this one (D124). Stderr is kept (last
 * 4 KiB) for error messages.
 */
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

const STDERR_KEEP = 4096;

export interface StdioLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

export class BunStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #launch: StdioLaunch;
  readonly #buffer = new ReadBuffer();
  #child: Bun.Subprocess<"pipe", "pipe", "pipe"> | undefined;
  #stderr = "";
  #closed = false;

  constructor(launch: StdioLaunch) {
    this.#launch = launch;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** The last few KiB the server wrote to stderr. */
  get stderr(): string {
    return this.#stderr.trim();
  }

  async start(): Promise<void> {
    const child = Bun.spawn([this.#launch.command, ...this.#launch.args], {
      cwd: this.#launch.cwd,
      env: this.#launch.env,
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
      detached: true,
    });
    this.#child = child;
    void this.#readStdout(child);
    void this.#readStderr(child);
    void child.exited.then((code) => {
      if (!this.#closed)
        this.onerror?.(
          new Error(
            `server process exited (${code === null ? "killed" : `code ${code}`})${this.stderr ? `: ${this.stderr.slice(-500)}` : ""}`,
          ),
        );
      this.#finish();
    });
  }

  async #readStdout(child: Bun.Subprocess<"pipe", "pipe", "pipe">): Promise<void> {
    try {
      for await (const chunk of child.stdout) {
        this.#buffer.append(Buffer.from(chunk));
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.#buffer.readMessage();
          } catch (error) {
            this.onerror?.(error instanceof Error ? error : new Error(String(error)));
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      }
    } catch {
      // the pipe closed with the process
    }
  }

  async #readStderr(child: Bun.Subprocess<"pipe", "pipe", "pipe">): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of child.stderr)
        this.#stderr = (this.#stderr + decoder.decode(chunk, { stream: true })).slice(-STDERR_KEEP);
    } catch {
      // the pipe closed with the process
    }
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const child = this.#child;
    if (!child || this.#closed) throw new Error("not connected");
    child.stdin.write(serializeMessage(message));
    await child.stdin.flush();
  }

  /** SIGTERM to the group, up to `graceMs` for the exit, then SIGKILL. Resolves once it exited. */
  async stop(graceMs: number): Promise<void> {
    const child = this.#child;
    this.#closed = true;
    if (!child) return this.#finish();
    if (child.exitCode === null && child.signalCode === null) {
      killGroup(child.pid, "SIGTERM");
      let timer: ReturnType<typeof setTimeout> | undefined;
      const graceOver = new Promise<"grace">((resolve) => (timer = setTimeout(() => resolve("grace"), graceMs)));
      const outcome = await Promise.race([child.exited.then(() => "exited" as const), graceOver]);
      clearTimeout(timer);
      if (outcome === "grace") killGroup(child.pid, "SIGKILL");
    }
    // Whatever the server left in its group goes too.
    killGroup(child.pid, "SIGKILL");
    await child.exited;
    this.#finish();
  }

  close(): Promise<void> {
    return this.stop(2000);
  }

  #finish(): void {
    if (this.#child === undefined && this.#closed) return;
    const wasOpen = this.#child !== undefined;
    this.#child = undefined;
    this.#closed = true;
    try {
      this.#buffer.clear();
    } catch {
      // nothing buffered
    }
    if (wasOpen) this.onclose?.();
  }
}
