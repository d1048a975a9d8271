/**
 * The process seal (D335): keeps a daemon's secrets out of /proc/<pid>/environ and its memory out
 * of reach of same-user processes, so a `bash` tool command (same uid, the daemon is its $PPID)
 * cannot read them. First start: the variables sealed-environment.ts does not keep go into an
 * anonymous memory file, and the process executes itself again (same pid, argv and executable)
 * with only the kept ones and a marker naming the file. Second start: the file is read and closed
 * at once, every variable is back in process.env and in libc's environment (workers and native
 * code read that one), and the process makes itself non-dumpable (PR_SET_DUMPABLE 0), which closes
 * its memory and ptrace to processes without CAP_SYS_PTRACE and its environ to other non-root
 * users (root still reads the environ, which then holds nothing secret). A step that fails (no
 * /proc, no libc, a seccomp filter) leaves the process running unsealed with a reason to warn.
 */
import { closeSync, fstatSync, readFileSync, readSync, readlinkSync, statSync, writeSync } from "node:fs";
import { type Libc, openLibc } from "./libc.ts";
import {
  SEAL_FILE_NAME,
  SEAL_MARKER,
  joinEntries,
  markedFd,
  markerEntry,
  partitionEnvironment,
  splitArguments,
  splitAssignment,
  splitEntries,
} from "./sealed-environment.ts";

export type SealResult =
  /** Started again: the initial environment holds only the kept variables. */
  | { state: "sealed"; dumpable: boolean }
  /** Nothing to move (every variable is kept): not started again. */
  | { state: "clean"; dumpable: boolean }
  /** Could not seal: the initial environment still holds everything. */
  | { state: "open"; reason: string; dumpable: boolean };

/** What the seal touches; a test swaps parts of it. */
export interface SealIo {
  libc: Libc | undefined;
  pid: number;
  env: Record<string, string | undefined>;
  readFile(path: string): Uint8Array;
  /** The whole content of a descriptor, from offset 0. */
  readDescriptor(fd: number): Uint8Array;
  writeDescriptor(fd: number, bytes: Uint8Array): void;
  closeDescriptor(fd: number): void;
  /** What /proc/self/fd/<fd> points to, or undefined when the descriptor is not open. */
  describeDescriptor(fd: number): string | undefined;
  /** Whether `path` is this process's executable (/proc/self/exe) now. */
  isOwnExecutable(path: string): boolean;
}

export function processIo(): SealIo {
  return {
    libc: openLibc(),
    pid: process.pid,
    env: process.env,
    readFile: (path) => readFileSync(path),
    readDescriptor(fd) {
      const bytes = Buffer.alloc(fstatSync(fd).size);
      let done = 0;
      while (done < bytes.byteLength) {
        const read = readSync(fd, bytes, done, bytes.byteLength - done, done);
        if (read === 0) break;
        done += read;
      }
      return bytes.subarray(0, done);
    },
    writeDescriptor(fd, bytes) {
      let done = 0;
      while (done < bytes.byteLength) done += writeSync(fd, bytes, done);
    },
    closeDescriptor: (fd) => closeSync(fd),
    describeDescriptor(fd) {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return undefined;
      }
    },
    isOwnExecutable(path) {
      try {
        const [named, running] = [statSync(path), statSync("/proc/self/exe")];
        return named.dev === running.dev && named.ino === running.ino;
      } catch {
        return false;
      }
    },
  };
}

/** Seals the process, or (on its second start) finishes the seal. Returns only when it did not execute itself again. */
export function sealProcess(io: SealIo = processIo()): SealResult {
  const { libc } = io;
  if (libc === undefined) return { state: "open", reason: "no libc to call (not Linux?)", dumpable: true };
  const fd = markedFd(io.env[SEAL_MARKER], io.pid);
  if (fd !== undefined) return unseal(io, libc, fd);
  let entries: { kept: Uint8Array[]; moved: Uint8Array[] };
  let argv: Uint8Array[];
  try {
    entries = partitionEnvironment(splitEntries(io.readFile("/proc/self/environ")));
    argv = splitArguments(io.readFile("/proc/self/cmdline"));
  } catch (error) {
    return open(libc, `cannot read /proc/self: ${message(error)}`);
  }
  if (entries.moved.length === 0) return { state: "clean", dumpable: stillDumpable(libc) };
  const file = libc.memfdCreate(SEAL_FILE_NAME);
  if (file < 0) return open(libc, `memfd_create failed (errno ${libc.errno()})`);
  try {
    io.writeDescriptor(file, joinEntries(entries.moved));
  } catch (error) {
    io.closeDescriptor(file);
    return open(libc, `writing the memory file failed: ${message(error)}`);
  }
  const path = executable(io, libc);
  libc.execve(path, argv, [...entries.kept, markerEntry(io.pid, file)]);
  const errno = libc.errno();
  io.closeDescriptor(file);
  return open(libc, `execve of ${path} failed (errno ${errno})`);
}

/**
 * The path to execute again: the one this process was executed by, so its name (`ps`, `top`,
 * /proc/<pid>/comm: `bun`, `spar`, `svc`) stays as it was; /proc/self/exe (the name then shows as
 * `exe`) when that path no longer leads to the same file.
 */
function executable(io: SealIo, libc: Libc): string {
  const path = libc.executedPath();
  return path !== undefined && io.isOwnExecutable(path) ? path : "/proc/self/exe";
}

/** The second start: every moved variable back where the first start had it, the file closed. */
function unseal(io: SealIo, libc: Libc, fd: number): SealResult {
  delete io.env[SEAL_MARKER];
  libc.unsetenv(SEAL_MARKER);
  const target = io.describeDescriptor(fd);
  if (target === undefined || !target.startsWith(`/memfd:${SEAL_FILE_NAME}`))
    return open(libc, `the marker names descriptor ${fd}, which is not the seal's memory file`);
  let content: Uint8Array;
  try {
    content = io.readDescriptor(fd);
  } catch (error) {
    return open(libc, `reading the seal's memory file failed: ${message(error)}`);
  } finally {
    io.closeDescriptor(fd);
  }
  const decoder = new TextDecoder();
  for (const entry of splitEntries(content)) {
    const { name, value } = splitAssignment(entry);
    libc.setenv(Buffer.from(name, "latin1"), value);
    io.env[name] = decoder.decode(value);
  }
  return { state: "sealed", dumpable: stillDumpable(libc) };
}

function open(libc: Libc, reason: string): SealResult {
  return { state: "open", reason, dumpable: stillDumpable(libc) };
}

/** PR_SET_DUMPABLE 0; true when the process is still dumpable afterwards (the call failed). */
function stillDumpable(libc: Libc): boolean {
  return libc.setDumpable(false) !== 0 || libc.dumpable() !== 0;
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The startup warning a result calls for, if any. */
export function sealWarning(result: SealResult, pid: number): string | undefined {
  const readers = result.dumpable ? "every process of this user and root" : "root (CAP_SYS_PTRACE)";
  if (result.state === "open")
    return `environment not sealed (${result.reason}): its variables, secrets included, stay in /proc/${pid}/environ, readable by ${readers}`;
  if (result.dumpable)
    return `could not make the process non-dumpable: its memory (/proc/${pid}/mem) stays readable by ${readers}`;
  return undefined;
}
