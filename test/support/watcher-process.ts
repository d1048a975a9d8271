/**
 * A `spar watcher watch` process for the tests: spawned from source with the given flags (its
 * probes on port 0), its stderr collected, resolved once the probes listen. `stop` sends SIGTERM
 * and answers the exit code.
 */
import { MAIN, REPO_ROOT, waitFor } from "./daemon.ts";

export interface WatcherProcess {
  /** The probes' base URL (/healthz, /readyz, /metrics). */
  base: string;
  stderr(): string;
  stop(): Promise<number>;
}

export async function spawnWatcher(flags: string[], env: Record<string, string> = {}): Promise<WatcherProcess> {
  const child = Bun.spawn([process.execPath, MAIN, "watcher", "watch", "--metrics-addr=127.0.0.1:0", ...flags], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
  });
  let stderr = "";
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of child.stderr as unknown as AsyncIterable<Uint8Array>)
      stderr += decoder.decode(chunk, { stream: true });
  })().catch(() => undefined);
  const stop = async () => {
    child.kill("SIGTERM");
    return await child.exited;
  };
  try {
    const base = await waitFor(() => /metrics listening on (http:\/\/\S+)/.exec(stderr)?.[1], 15_000, "metrics line");
    return { base, stderr: () => stderr, stop };
  } catch (error) {
    await stop();
    throw new Error(`${error instanceof Error ? error.message : String(error)}; stderr:\n${stderr}`);
  }
}

/** Resolves once the watcher's /readyz answers 200. */
export async function watcherReady(watcher: WatcherProcess): Promise<void> {
  await waitFor(
    async () => ((await fetch(`${watcher.base}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined),
    15_000,
    "watcher ready",
  );
}
