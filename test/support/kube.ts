/**
 * Test helpers for Kubernetes clients against the fake apiserver (scripts/fake-apiserver/):
 * a watch-stream reader that awaits the next events with a deadline, a kubectl runner that kills
 * its process in every case, and re-exports of the kubeconfig and certificate helpers.
 */
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeTempDir, recordTempPath } from "./temp-dirs.ts";

export { generateCertificates, kubeconfigText, writeKubeconfig } from "../../scripts/fake-apiserver/kubeconfig.ts";
export type { CertificateSet, KubeconfigInput } from "../../scripts/fake-apiserver/kubeconfig.ts";

export interface WatchLine {
  type: string;
  object: Record<string, unknown> & { metadata?: Record<string, unknown> };
}

export function kubeTempDir(prefix = "spar-kube-"): string {
  return makeTempDir(prefix);
}

/** Reads a watch response line by line; `next(n)` resolves with the next n events or rejects after the deadline. */
export class WatchReader {
  private buffer = "";
  private readonly lines: WatchLine[] = [];
  private ended = false;
  private failure: unknown;
  private waiter: (() => void) | undefined;
  /** Raw text received, blank lines included (tests check the leading newline). */
  raw = "";

  constructor(response: Response) {
    void this.pump(response);
  }

  get done(): boolean {
    return this.ended;
  }

  /** The error that ended the stream abnormally, if any. */
  get error(): unknown {
    return this.failure;
  }

  private async pump(response: Response): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        const text = decoder.decode(chunk, { stream: true });
        this.raw += text;
        this.buffer += text;
        let newline = this.buffer.indexOf("\n");
        while (newline >= 0) {
          const line = this.buffer.slice(0, newline).trim();
          this.buffer = this.buffer.slice(newline + 1);
          if (line !== "") this.lines.push(JSON.parse(line) as WatchLine);
          newline = this.buffer.indexOf("\n");
        }
        this.wake();
      }
    } catch (error) {
      this.failure = error;
    }
    this.ended = true;
    this.wake();
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }

  /** The next `count` events; rejects if the stream ends first or `timeoutMs` passes. */
  async next(count = 1, timeoutMs = 3000): Promise<WatchLine[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.lines.length < count) {
      if (this.ended) throw new Error(`watch ended after ${this.lines.length} of ${count} events`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${count} watch events (have ${this.lines.length})`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left); // deadline: the next event's
        this.waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return this.lines.splice(0, count);
  }

  /** Resolves when the stream has ended (cleanly or not); rejects after `timeoutMs`. */
  async end(timeoutMs = 3000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.ended) {
      if (Date.now() > deadline) throw new Error("watch did not end in time");
      await Bun.sleep(10); // poll
    }
  }

  /** Events received and not yet taken. */
  pending(): WatchLine[] {
    return [...this.lines];
  }
}

/** kubectl's discovery cache goes here, not under the user's ~/.kube (removed after the test file). */
const KUBECTL_CACHE = join(tmpdir(), `spar-kubectl-cache-${process.pid}`);

function kubectlCommand(kubeconfig: string, args: string[]): string[] {
  recordTempPath(KUBECTL_CACHE);
  return ["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", KUBECTL_CACHE, ...args];
}

export interface KubectlResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Run kubectl to completion (killed after `timeoutMs`). */
export async function kubectl(kubeconfig: string, args: string[], timeoutMs = 15_000): Promise<KubectlResult> {
  const child = Bun.spawn(kubectlCommand(kubeconfig, args), { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs); // deadline: a hung kubectl
  try {
    const [stdout, stderr, exitCode] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    return { exitCode, stdout, stderr };
  } finally {
    clearTimeout(timer);
    child.kill("SIGKILL");
  }
}

/** A long-running kubectl (e.g. `get --watch`): read its output so far, then `stop()` it. */
export interface KubectlProcess {
  output(): string;
  errors(): string;
  /** Resolves once stdout contains `text`; rejects after `timeoutMs`. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<string>;
  stop(): Promise<void>;
}

export function spawnKubectl(kubeconfig: string, args: string[]): KubectlProcess {
  const child = Bun.spawn(kubectlCommand(kubeconfig, args), { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  let stdout = "";
  let stderr = "";
  const collect = async (stream: ReadableStream<Uint8Array>, append: (text: string) => void) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>)
      append(decoder.decode(chunk, { stream: true }));
  };
  void collect(child.stdout, (text) => {
    stdout += text;
  });
  void collect(child.stderr, (text) => {
    stderr += text;
  });
  return {
    output: () => stdout,
    errors: () => stderr,
    waitFor: async (text, timeoutMs = 8000) => {
      const deadline = Date.now() + timeoutMs;
      const found = () => (typeof text === "string" ? stdout.includes(text) : text.test(stdout));
      while (!found()) {
        if (Date.now() > deadline)
          throw new Error(`kubectl output never contained ${String(text)}; stdout=${stdout} stderr=${stderr}`);
        if (child.exitCode !== null)
          throw new Error(`kubectl exited ${child.exitCode} before printing ${String(text)}; stderr=${stderr}`);
        await Bun.sleep(25); // poll
      }
      return stdout;
    },
    stop: async () => {
      child.kill("SIGKILL");
      await child.exited;
    },
  };
}
