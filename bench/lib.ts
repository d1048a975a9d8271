/**
 * Shared bench plumbing: spawning servers on port 0 and reading the port back, killing every
 * child on exit (normal, error or signal), /proc CPU and RSS readings, percentiles and tables.
 * Only bench scripts import this.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const REPO_ROOT = resolve(import.meta.dir, "..");
export const BUN = process.execPath;
/** Kernel clock ticks per second for /proc/<pid>/stat (USER_HZ; 100 on Linux). */
const CLK_TCK = 100;

/** The shared clock: milliseconds since the epoch with sub-ms resolution, same in every process. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

type Child = { kill(signal?: number | NodeJS.Signals): void; readonly exitCode: number | null; readonly pid: number };
const children = new Set<Child>();
let cleanupInstalled = false;

/** Track a child so it is killed when this process exits, however it exits. */
export function track(child: Child): void {
  installCleanup();
  children.add(child);
}

export function untrack(child: Child): void {
  children.delete(child);
}

const tempDirs: string[] = [];
const exitHooks: Array<() => void> = [];

/** Run `hook` (synchronous) when this process exits, however it exits, before temp dirs go. */
export function onExit(hook: () => void): void {
  installCleanup();
  exitHooks.push(hook);
}

function runExitHooks(): void {
  for (const hook of exitHooks.splice(0)) {
    try {
      hook();
    } catch {
      // best effort
    }
  }
}

/** A fresh temp directory, removed when this process exits. */
export function benchTempDir(prefix = "spar-bench-"): string {
  installCleanup();
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

function removeTempDirs(): void {
  for (const dir of tempDirs.splice(0)) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // best effort
    }
  }
}

function killAll(): void {
  for (const child of children) {
    try {
      if (child.exitCode === null) child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
  children.clear();
}

function installCleanup(): void {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  process.on("exit", () => {
    killAll();
    runExitHooks();
    removeTempDirs();
  });
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(signal, () => {
      killAll();
      process.exit(130);
    });
  }
  process.on("uncaughtException", (error) => {
    console.error("bench: uncaught", error);
    killAll();
    process.exit(1);
  });
  process.on("unhandledRejection", (error) => {
    console.error("bench: unhandled rejection", error);
    killAll();
    process.exit(1);
  });
}

export interface Server {
  readonly name: string;
  readonly port: number;
  readonly pid: number;
  readonly baseUrl: string;
  log(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

/** Spawn `cmd` (`env` added to this process's), wait for `listening on http://host:port` on stderr, and keep draining it. */
export async function spawnServer(
  name: string,
  cmd: string[],
  timeoutMs = 20_000,
  env: Record<string, string> = {},
): Promise<Server> {
  const child = Bun.spawn(cmd, {
    cwd: REPO_ROOT,
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
    env: { ...process.env, ...env },
  });
  track(child);
  let log = "";
  const decoder = new TextDecoder();
  const reader = child.stderr.getReader();
  const port = await new Promise<number>((resolvePort, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} did not report a port within ${timeoutMs} ms; log:\n${log}`)),
      timeoutMs,
    );
    let found = false;
    (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        log += decoder.decode(value, { stream: true });
        if (log.length > 1_000_000) log = log.slice(-500_000);
        const match = /listening on https?:\/\/[^:\s]+:(\d+)/.exec(log);
        if (match && !found) {
          found = true;
          clearTimeout(timer);
          resolvePort(Number(match[1]));
        }
      }
      if (!found) {
        clearTimeout(timer);
        reject(new Error(`${name} exited (code ${await child.exited}) before listening; log:\n${log}`));
      }
    })().catch(reject);
  }).catch(async (error: unknown) => {
    child.kill("SIGKILL");
    await child.exited;
    untrack(child);
    throw error;
  });
  return {
    name,
    port,
    pid: child.pid,
    baseUrl: `http://127.0.0.1:${port}`,
    log: () => log,
    stop: async (graceMs = 3000) => {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
        await child.exited;
        clearTimeout(timer);
      }
      untrack(child);
    },
  };
}

/** User+system CPU seconds of a process (all its threads), from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** User+system CPU seconds of each of a process's threads, summed by thread name (/proc/<pid>/task). */
export function threadCpuSeconds(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${task}/stat`, "utf8");
    } catch {
      continue; // the thread ended between the listing and the read
    }
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    byName.set(name, (byName.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / CLK_TCK);
  }
  return byName;
}

/** Resident set size in KiB, from /proc/<pid>/status VmRSS. */
export function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  return match ? Number(match[1]) : Number.NaN;
}

/** Quantile (0..1) of an ascending-sorted array, nearest rank. */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

export function median(values: readonly number[]): number {
  const finite = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  if (finite.length === 0) return Number.NaN;
  const mid = finite.length >> 1;
  return finite.length % 2 === 1 ? (finite[mid] ?? Number.NaN) : ((finite[mid - 1] ?? 0) + (finite[mid] ?? 0)) / 2;
}

/** Format a number compactly: 123456 -> "123k", 12.34 -> "12.3", 0.123 -> "0.12". */
export function fmt(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return "-";
  const abs = Math.abs(value);
  if (abs >= 10_000) return `${(value / 1000).toFixed(abs >= 100_000 ? 0 : 1)}k`;
  if (abs >= 100) return value.toFixed(0);
  return value.toPrecision(digits).replace(/\.?0+$/, (m) => (m.includes(".") ? "" : m));
}

/** A GitHub-style markdown table. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? "").length)));
  const line = (cells: readonly string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join(" | ")} |`;
  return [line(headers), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

/** Parse `--name=value` flags into a map (bench scripts only take a few). */
export function argFlags(argv: readonly string[]): Map<string, string> {
  const flags = new Map<string, string>();
  for (const arg of argv) {
    const match = /^--([^=]+)(?:=(.*))?$/.exec(arg);
    if (match?.[1]) flags.set(match[1], match[2] ?? "true");
  }
  return flags;
}
