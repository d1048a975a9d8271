/**
 * Which variables a daemon keeps in its initial environment when it seals itself
 * (process-seal.ts, D335), and the byte formats the seal moves them in. /proc/<pid>/environ shows
 * the environment a process was started with, whatever it later does to process.env; the seal
 * starts the daemon again with only the variables below, and hands it the rest through a memory
 * file. Kept: what a shell needs and names its tools already see (the tools' default allow list),
 * and names a runtime reads while it starts, before the moved variables are back; none of them a
 * secret. Everything else, proxies included (their URLs can carry credentials; Bun's fetch reads
 * them from process.env at each call), is moved. Entries are raw `NAME=value` bytes as execve
 * takes them: a value need not be UTF-8.
 */
import { DEFAULT_TOOL_ENV } from "../tools/tool-environment.ts";

/** Set in the sealed start's environment: `<pid>:<fd>` of the memory file holding the rest. */
export const SEAL_MARKER = "SPAR_SEALED_ENV";

/** The memory file's name (it shows as `/memfd:spar-env` in /proc/<pid>/fd). */
export const SEAL_FILE_NAME = "spar-env";

/** Names Bun or the TLS and runtime layers may read before the daemon's own code runs. */
export const RUNTIME_ENV: readonly string[] = [
  "BUN_JSC_*",
  "BUN_GARBAGE_COLLECTOR_LEVEL",
  "BUN_OPTIONS",
  "BUN_RUNTIME_TRANSPILER_CACHE_PATH",
  "BUN_FEATURE_FLAG_*",
  "NODE_OPTIONS",
  "NODE_EXTRA_CA_CERTS",
  "NODE_TLS_REJECT_UNAUTHORIZED",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "FORCE_COLOR",
];

const KEPT: readonly string[] = [...DEFAULT_TOOL_ENV, ...RUNTIME_ENV];

const EQUALS = 0x3d;

/** Whether the variable stays in the sealed start's environment. */
export function keptAtStart(name: string): boolean {
  return KEPT.some((pattern) => (pattern.endsWith("*") ? name.startsWith(pattern.slice(0, -1)) : name === pattern));
}

/** The NUL-separated entries of /proc/self/environ (or a seal file), empty ones dropped. */
export function splitEntries(raw: Uint8Array): Uint8Array[] {
  const entries: Uint8Array[] = [];
  let start = 0;
  for (let index = 0; index <= raw.byteLength; index++) {
    if (index < raw.byteLength && raw[index] !== 0) continue;
    if (index > start) entries.push(raw.subarray(start, index));
    start = index + 1;
  }
  return entries;
}

/** The arguments of /proc/self/cmdline: each ended by a NUL, an empty argument kept. */
export function splitArguments(raw: Uint8Array): Uint8Array[] {
  const args: Uint8Array[] = [];
  let start = 0;
  for (let index = 0; index < raw.byteLength; index++) {
    if (raw[index] !== 0) continue;
    args.push(raw.subarray(start, index));
    start = index + 1;
  }
  if (start < raw.byteLength) args.push(raw.subarray(start));
  return args;
}

/** The entries joined back, each ended by a NUL (the seal file's format). */
export function joinEntries(entries: readonly Uint8Array[]): Uint8Array {
  return Buffer.concat(entries.flatMap((entry) => [entry, new Uint8Array(1)]));
}

/** An entry's name and value bytes; an entry without `=` is a name with an empty value. */
export function splitAssignment(entry: Uint8Array): { name: string; value: Uint8Array } {
  const at = entry.indexOf(EQUALS);
  const end = at < 0 ? entry.byteLength : at;
  return { name: Buffer.from(entry.subarray(0, end)).toString("latin1"), value: entry.subarray(end + 1) };
}

/**
 * The environment split for a sealed start: `kept` stays in it, `moved` goes to the seal file. A
 * marker left by another process (a spar that started this one) is dropped.
 */
export function partitionEnvironment(entries: readonly Uint8Array[]): { kept: Uint8Array[]; moved: Uint8Array[] } {
  const kept: Uint8Array[] = [];
  const moved: Uint8Array[] = [];
  for (const entry of entries) {
    const { name } = splitAssignment(entry);
    if (name === SEAL_MARKER) continue;
    (keptAtStart(name) ? kept : moved).push(entry);
  }
  return { kept, moved };
}

export function markerEntry(pid: number, fd: number): Uint8Array {
  return Buffer.from(`${SEAL_MARKER}=${pid}:${fd}`);
}

/** The seal file's descriptor when the marker was set for this very process (execve keeps the pid). */
export function markedFd(value: string | undefined, pid: number): number | undefined {
  const match = /^(\d+):(\d+)$/.exec(value ?? "");
  if (match === null || Number(match[1]) !== pid) return undefined;
  return Number(match[2]);
}
