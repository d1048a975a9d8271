/**
 * Flags and config keys of the attach listener's guards and caps: the Host names a listener
 * without an authentication gate also serves (DNS-rebinding guard), the proxies whose
 * X-Forwarded-* headers are believed, the open-stream caps, and the per-session inbox caps. Read flag first, then config key, then default; a bad value is an error
 * naming where it was set. Owns no behaviour: src/surfaces/http/ and the runtime apply them.
 */
import { readFileSync } from "node:fs";
import { type Result, err, ok } from "../core/result.ts";
import type { InboxCaps } from "../core/inbox-room.ts";
import { type StreamCaps, defaultStreamCaps } from "../surfaces/http/stream-admission.ts";
import { type TrustedProxies, parseTrustedProxies } from "../surfaces/http/trusted-proxies.ts";
import { SettingReader } from "../config/setting-reader.ts";
import type { FlagSpec, FlagValue } from "../config/flag-spec.ts";

export const ATTACH_LIMITS_FLAGS: readonly FlagSpec[] = [
  {
    name: "attach-allowed-hosts",
    kind: "string",
    help: "host names (or *.domain) a listener without a token serves besides loopback names and addresses, comma-separated (DNS-rebinding guard)",
    configKey: "attach.allowed_hosts",
  },
  {
    name: "attach-trusted-proxies",
    kind: "string",
    help: "addresses or CIDR blocks of reverse proxies whose X-Forwarded-Host and X-Forwarded-Proto are believed, comma-separated (from anyone else they are ignored)",
    configKey: "attach.trusted_proxies",
  },
  {
    name: "attach-idle-timeout",
    kind: "duration",
    help: "close a connection that sends nothing for this long (an idle keep-alive connection, a stalled body) and refuse with 408 a body not whole within it, on every listener of the daemon; a handler's own work and event streams are exempt",
    defaultValue: "1m0s",
    configKey: "attach.idle_timeout",
    bounds: { min: 1000 },
  },
  {
    name: "attach-max-streams",
    kind: "int",
    help: "event streams (/events, /perms/stream) open at once, all callers together; past it 429",
    defaultText: "the open-file limit minus a tenth of it (at least 512 kept); 4096 when unknown",
    configKey: "attach.max_streams",
    bounds: { min: 1, max: 10_000_000 },
  },
  {
    name: "attach-max-streams-per-caller",
    kind: "int",
    help: "event streams one caller may hold open (admins exempt); past it 429",
    defaultText: "256 with per-caller auth, else --attach-max-streams",
    configKey: "attach.max_streams_per_caller",
    bounds: { min: 1, max: 10_000_000 },
  },
  {
    name: "inbox-max-messages",
    kind: "int",
    help: "messages a session's inbox may hold waiting for a turn; an inject past it is 429",
    defaultValue: "1000",
    configKey: "attach.inbox_max_messages",
    bounds: { min: 1, max: 10_000_000 },
  },
  {
    name: "inbox-max-bytes",
    kind: "int",
    help: "bytes of messages a session's inbox may hold waiting for a turn; an inject past it is 429",
    defaultValue: "4194304",
    configKey: "attach.inbox_max_bytes",
    bounds: { min: 1024, max: 1024 * 1024 * 1024 },
  },
];

export interface AttachLimits {
  allowedHosts: string[];
  /** Seconds a connection may send nothing (Bun's idleTimeout: 1 to 255). */
  idleTimeoutSeconds: number;
  trustedProxies: TrustedProxies;
  streams: StreamCaps;
  inbox: InboxCaps;
}

/** A list setting: an array of strings or one comma-separated string. */
function stringList(read: SettingReader, name: string): Result<string[]> {
  const found = read.setting(name);
  if (found === undefined) return ok([]);
  const value = found.value;
  const items =
    typeof value === "string"
      ? value.split(",")
      : Array.isArray(value) && value.every((item) => typeof item === "string")
        ? (value as string[])
        : undefined;
  if (items === undefined) return err(`${found.from} must be a list of strings (or one comma-separated string)`);
  return ok(items.map((item) => item.trim()).filter((item) => item !== ""));
}

/** The soft open-file limit of this process (Linux), or undefined where it cannot be read. */
export function openFileLimit(): number | undefined {
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((candidate) => candidate.startsWith("Max open files"));
    const soft = line?.slice("Max open files".length).trim().split(/\s+/)[0];
    return soft === undefined || soft === "unlimited" ? undefined : Number(soft);
  } catch {
    return undefined;
  }
}

/**
 * Read every setting of the table. `perCallerAuth`: callers are told apart (a token table or
 * client certificates); otherwise every request is one caller and the per-caller cap defaults to
 * the global one.
 */
export function resolveAttachLimits(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
  perCallerAuth: boolean,
  fileLimit = openFileLimit(),
): Result<AttachLimits> {
  const read = new SettingReader(ATTACH_LIMITS_FLAGS, flags, config);
  const allowedHosts = stringList(read, "attach-allowed-hosts");
  if (!allowedHosts.ok) return allowedHosts;
  const proxyEntries = stringList(read, "attach-trusted-proxies");
  if (!proxyEntries.ok) return proxyEntries;
  const trustedProxies = parseTrustedProxies(
    proxyEntries.value,
    read.setting("attach-trusted-proxies")?.from ?? "--attach-trusted-proxies",
  );
  if (!trustedProxies.ok) return trustedProxies;
  const idle = read.duration("attach-idle-timeout");
  if (!idle.ok) return idle;
  if (idle.value > 255_000)
    return err(
      `${read.setting("attach-idle-timeout")?.from ?? "--attach-idle-timeout"} must be at most 4m15s (255 s, the longest Bun holds)`,
    );
  const defaults = defaultStreamCaps(fileLimit);
  const maxStreams = read.int("attach-max-streams", defaults.maxStreams);
  if (!maxStreams.ok) return maxStreams;
  const perCaller = read.int(
    "attach-max-streams-per-caller",
    perCallerAuth ? Math.min(defaults.maxPerCaller, maxStreams.value) : maxStreams.value,
  );
  if (!perCaller.ok) return perCaller;
  const maxMessages = read.int("inbox-max-messages");
  if (!maxMessages.ok) return maxMessages;
  const maxBytes = read.int("inbox-max-bytes");
  if (!maxBytes.ok) return maxBytes;
  return ok({
    allowedHosts: allowedHosts.value,
    idleTimeoutSeconds: Math.ceil(idle.value / 1000),
    trustedProxies: trustedProxies.value,
    streams: { maxStreams: maxStreams.value, maxPerCaller: perCaller.value, adminReserve: defaults.adminReserve },
    inbox: { maxMessages: maxMessages.value, maxBytes: maxBytes.value },
  });
}
