/**
 * The builtin `bash` tool: `bash -c <command>` in the workspace root, in its own process group
 * (setsid), so a timeout or a turn cancel kills the command and everything it started: SIGTERM
 * to the group, SIGKILL after a short grace. When bash exits, whatever it left running in its
 * group is killed too (no orphans). stdout and stderr are capped separately (the head is kept);
 * the rest is drained and counted, never buffered. If the daemon dies (kill -9), a watcher in the
 * group sees the daemon's end of a pipe close and kills the group: a command never outlives the
 * daemon to finish an effect the restarted daemon reported as cut off (D167).
 */
import * as v from "valibot";
import type { BuiltinTool, ToolContext } from "./builtin-tool.ts";

const DEFAULT_TIMEOUT_MS = 120_000;
const MAX_TIMEOUT_MS = 600_000;
/** Between SIGTERM and SIGKILL of the process group. */
const KILL_GRACE_MS = 1000;

/** Live process groups, so the tool host can kill them all on shutdown. */
const liveGroups = new Set<number>();

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/** Kill every command still running (tool-host shutdown). */
export function killAllBashGroups(): void {
  for (const pid of liveGroups) killGroup(pid, "SIGKILL");
  liveGroups.clear();
}

async function readCapped(
  stream: ReadableStream<Uint8Array>,
  cap: number,
): Promise<{ text: string; bytes: number; truncated: boolean }> {
  const chunks: Uint8Array[] = [];
  let kept = 0;
  let bytes = 0;
  for await (const chunk of stream) {
    bytes += chunk.byteLength;
    if (kept < cap) {
      const part = chunk.subarray(0, cap - kept);
      chunks.push(part);
      kept += part.byteLength;
    }
  }
  const text = Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\uFFFD$/, "");
  return { text, bytes, truncated: bytes > cap };
}

const BashInput = v.object({
  command: v.pipe(
    v.string("command must be a string"),
    v.minLength(1, "command must not be empty"),
    v.maxLength(64 * 1024, "command must be at most 65536 characters"),
    v.description("The command line, run by bash -c."),
  ),
  timeout_seconds: v.optional(
    v.pipe(
      v.number("timeout_seconds must be a number"),
      v.minValue(0.1, "timeout_seconds must be at least 0.1"),
      v.maxValue(MAX_TIMEOUT_MS / 1000, `timeout_seconds must be at most ${MAX_TIMEOUT_MS / 1000}`),
      v.description("Kill the command after this many seconds (default 120)."),
    ),
  ),
});

/**
 * Runs `$1` with stdin from /dev/null, beside a watcher that reads the daemon's pipe (fd 3) and
 * kills the whole group (`kill 0`) when it reaches end of file: the daemon never writes to it, so
 * that happens only when the daemon's end closes, at its death. The command keeps the group
 * leader's pid (exec) and does not inherit fd 3.
 */
const WATCHED_COMMAND =
  'exec 3<&0 </dev/null; { while read -r -u 3 _; do :; done; kill -KILL 0; } & exec bash --norc -c "$1" 3<&-';

async function runBash(input: v.InferOutput<typeof BashInput>, context: ToolContext) {
  // --norc: stdin is a socket pair, and a bash built with SSH_SOURCE_BASHRC (Debian's) then reads
  // ~/.bashrc when SHLVL is unset, as it is in the tools' allow-listed environment.
  const child = Bun.spawn(["bash", "--norc", "-c", WATCHED_COMMAND, "spar-bash", input.command], {
    cwd: context.root,
    // Held open, never written: its end of file tells the group the daemon died.
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
    env: { ...context.env, PAGER: "cat", GIT_PAGER: "cat" },
  });
  liveGroups.add(child.pid);
  let stoppedBy: "timeout" | "cancel" | undefined;
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  const stop = () => {
    stoppedBy =
      context.signal.reason instanceof DOMException && context.signal.reason.name === "TimeoutError"
        ? "timeout"
        : "cancel";
    killGroup(child.pid, "SIGTERM");
    killTimer = setTimeout(() => killGroup(child.pid, "SIGKILL"), KILL_GRACE_MS);
  };
  if (context.signal.aborted) stop();
  else context.signal.addEventListener("abort", stop, { once: true });
  const reading = Promise.all([readCapped(child.stdout, context.capBytes), readCapped(child.stderr, context.capBytes)]);
  const exitCode = await child.exited;
  // The command is done; anything it left running in its group goes with it (and closes the pipes).
  killGroup(child.pid, "SIGKILL");
  const [stdout, stderr] = await reading;
  context.signal.removeEventListener("abort", stop);
  if (killTimer) clearTimeout(killTimer);
  liveGroups.delete(child.pid);
  await Promise.resolve(child.stdin.end()).catch(() => undefined);
  const output: Record<string, unknown> = {
    exit_code: child.signalCode ? null : exitCode,
    stdout: stdout.text,
    stderr: stderr.text,
    pid: child.pid,
  };
  if (child.signalCode) output.signal = child.signalCode;
  if (stdout.truncated || stderr.truncated)
    output.truncated = {
      stdout_bytes: stdout.bytes,
      stderr_bytes: stderr.bytes,
      kept_bytes_per_stream: context.capBytes,
    };
  if (stoppedBy === "timeout")
    output.error = `command timed out after ${context.timeoutMs / 1000} s; its process group was killed`;
  if (stoppedBy === "cancel") output.error = "command stopped: the turn was cancelled";
  return { output, isError: stoppedBy !== undefined || exitCode !== 0 };
}

export const bashTool: BuiltinTool<typeof BashInput> = {
  name: "bash",
  description:
    "Run a shell command with bash -c in the workspace root. Returns exit_code, stdout and stderr (each capped; the head is kept). The command and everything it starts is killed after timeout_seconds (default 120, at most 600).",
  input: BashInput,
  toolClass: "shell",
  timeoutMs: DEFAULT_TIMEOUT_MS,
  maxTimeoutMs: MAX_TIMEOUT_MS,
  capBytes: 32 * 1024,
  timeoutFor: (input) =>
    input.timeout_seconds === undefined ? DEFAULT_TIMEOUT_MS : Math.round(input.timeout_seconds * 1000),
  run: runBash,
};
