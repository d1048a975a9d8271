/**
 * The few libc calls the process seal needs (process-seal.ts), through bun:ffi: memfd_create,
 * execve, setenv/unsetenv, prctl (PR_SET_DUMPABLE / PR_GET_DUMPABLE), getauxval (the path the
 * process was executed by) and errno. Strings cross as
 * raw bytes (an environment value need not be UTF-8). Opened on first use; `openLibc` answers
 * undefined where no libc can be opened (not Linux, or neither glibc nor musl found).
 */
import { CString, FFIType, dlopen, ptr, read } from "bun:ffi";

export interface Libc {
  /** A new anonymous memory file that survives execve (no MFD_CLOEXEC); -1 on failure. */
  memfdCreate(name: string): number;
  /** Replaces the process image; returns (-1) only when that failed. */
  execve(path: string, argv: readonly Uint8Array[], env: readonly Uint8Array[]): number;
  setenv(name: Uint8Array, value: Uint8Array): number;
  unsetenv(name: string): number;
  /** prctl(PR_SET_DUMPABLE, on): 0 on success. */
  setDumpable(on: boolean): number;
  /** prctl(PR_GET_DUMPABLE): 0 or 1 (2 for suid_dumpable), -1 on failure. */
  dumpable(): number;
  /** The path this process was executed by (AT_EXECFN, as its execve got it: maybe relative). */
  executedPath(): string | undefined;
  /** errno of the calling thread, right after a call that failed. */
  errno(): number;
}

const PR_SET_DUMPABLE = 4;
const PR_GET_DUMPABLE = 3;
const AT_EXECFN = 31;

const SYMBOLS = {
  memfd_create: { args: [FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
  execve: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  setenv: { args: [FFIType.ptr, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
  unsetenv: { args: [FFIType.ptr], returns: FFIType.i32 },
  prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 },
  getauxval: { args: [FFIType.u64], returns: FFIType.ptr },
  __errno_location: { args: [], returns: FFIType.ptr },
} as const;

/** glibc, then musl's names for the architectures Bun ships. */
const LIBRARIES = ["libc.so.6", "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1"];

function cString(text: string | Uint8Array): Buffer {
  const bytes = typeof text === "string" ? Buffer.from(text) : text;
  const out = Buffer.alloc(bytes.byteLength + 1);
  out.set(bytes);
  return out;
}

/** A NULL-terminated array of pointers to the strings; the strings are kept alive by the caller. */
function pointerArray(strings: readonly Buffer[]): BigUint64Array {
  const array = new BigUint64Array(strings.length + 1);
  strings.forEach((text, index) => {
    array[index] = BigInt(ptr(text));
  });
  return array;
}

function keepAlive(..._values: unknown[]): void {}

function load(): ReturnType<typeof dlopen<typeof SYMBOLS>> | undefined {
  if (process.platform !== "linux") return undefined;
  for (const name of LIBRARIES) {
    try {
      return dlopen(name, SYMBOLS);
    } catch {
      // not this one
    }
  }
  return undefined;
}

export function openLibc(): Libc | undefined {
  const lib = load();
  if (lib === undefined) return undefined;
  const call = lib.symbols;
  return {
    memfdCreate: (name) => call.memfd_create(cString(name), 0),
    execve(path, argv, env) {
      const pathBytes = cString(path);
      const argvStrings = argv.map(cString);
      const envStrings = env.map(cString);
      const result = call.execve(pathBytes, pointerArray(argvStrings), pointerArray(envStrings));
      // Only reached on failure; the strings the pointer arrays point into stay referenced until here.
      keepAlive(pathBytes, argvStrings, envStrings);
      return result;
    },
    setenv: (name, value) => call.setenv(cString(name), cString(value), 1),
    unsetenv: (name) => call.unsetenv(cString(name)),
    setDumpable: (on) => call.prctl(PR_SET_DUMPABLE, on ? 1 : 0, 0, 0, 0),
    dumpable: () => call.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0),
    executedPath() {
      const name = call.getauxval(AT_EXECFN);
      return name === null ? undefined : new CString(name).toString();
    },
    errno() {
      const location = call.__errno_location();
      return location === null ? 0 : read.i32(location, 0);
    },
  };
}
