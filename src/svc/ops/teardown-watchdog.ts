/**
 * The teardown watchdog (docs/svc.md#limits, 15 s; exit code 4, docs/svc-drain.md#exit-codes): the
 * unwind after the drain (listeners stopped, tool servers and their children, workers, the store)
 * gets 15 s; past that the daemon prints what is still open (the workers and their current turn,
 * the sessions whose turn has not ended, tool-server child processes, the listeners' open requests)
 * and exits 4 instead of hanging.
 */

/** How long the post-drain unwind may take (docs/svc.md#limits). */
export const TEARDOWN_WATCHDOG_MS = 15_000;

/** What is still open, one line each, when the watchdog fires. */
export type OpenReport = () => string[];

/**
 * Resolve with "done" once `unwind` has finished, or "fired" after `ms` (the report is written to
 * `write` first). `unwind` rejecting counts as finished: its error is the caller's.
 */
export async function watchTeardown(
  unwind: Promise<void>,
  report: OpenReport,
  write: (text: string) => void,
  ms: number = TEARDOWN_WATCHDOG_MS,
): Promise<"done" | "fired"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const fired = new Promise<"fired">((resolve) => {
    timer = setTimeout(() => resolve("fired"), ms);
  });
  try {
    const outcome = await Promise.race([unwind.then(() => "done" as const), fired]);
    if (outcome === "fired") {
      const lines = safeReport(report);
      write(
        `spar svc: teardown watchdog: the unwind after the drain did not finish within ${ms / 1000} s; still open:\n${lines.map((line) => `  ${line}\n`).join("")}forcing exit 4\n`,
      );
    }
    return outcome;
  } finally {
    clearTimeout(timer);
  }
}

function safeReport(report: OpenReport): string[] {
  try {
    const lines = report();
    return lines.length > 0 ? lines : ["nothing the daemon tracks (a hung close of the store or a listener)"];
  } catch (error) {
    return [`(the report failed: ${String(error)})`];
  }
}
