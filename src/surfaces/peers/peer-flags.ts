/**
 * The peer hub's flags and config keys, and the check of their combination: the state file
 * without the hub is a startup error (docs/agent.md#peer-hub); the registration caps and the longest
 * lease (issue 13) are bounded. Flags win over the config file, as for
 * every agent flag. Owns no parsing of argv (src/config/flag-parser.ts) and no hub behavior (peer-hub.ts).
 */
import { resolve } from "node:path";
import { formatDuration } from "../../core/duration.ts";
import { DEFAULT_PEER_LIMITS, type PeerLimits } from "../../core/peer-registry.ts";
import { type Result, err, ok } from "../../core/result.ts";
import type { FlagSpec, FlagValue } from "../../config/flag-spec.ts";
import { SettingReader } from "../../config/setting-reader.ts";

/** Bounds of the count caps (a cap of millions would bring back the exhaustion it is there for). */
const MAX_REGISTRATION_CAP = 100_000;

export const PEER_FLAGS: readonly FlagSpec[] = [
  {
    name: "attach-peer-hub",
    kind: "bool",
    help: "serve the peer registry on the attach listener (POST/GET /peers, heartbeat, DELETE)",
    defaultText: "false",
    configKey: "attach.peer_hub",
  },
  {
    name: "attach-peer-state-file",
    kind: "string",
    help: "keep the peer registry across restarts in this JSON Lines file (mode 0600; holds registration ids); needs --attach-peer-hub",
    configKey: "attach.peer_state_file",
  },
  {
    name: "attach-peer-max-per-caller",
    kind: "int",
    help: "live peer registrations one caller may hold; one more is refused 429 with Retry-After",
    defaultValue: String(DEFAULT_PEER_LIMITS.maxPerCaller),
    configKey: "attach.peer_max_per_caller",
    bounds: { min: 1, max: MAX_REGISTRATION_CAP },
  },
  {
    name: "attach-peer-max-total",
    kind: "int",
    help: "live peer registrations the hub holds in all; one more is refused 429 with Retry-After",
    defaultValue: String(DEFAULT_PEER_LIMITS.maxTotal),
    configKey: "attach.peer_max_total",
    bounds: { min: 1, max: MAX_REGISTRATION_CAP },
  },
  {
    name: "attach-peer-max-lease",
    kind: "duration",
    help: "longest peer lease granted: a longer heartbeat_ttl_sec is granted as this (the answer shows it)",
    defaultValue: formatDuration(DEFAULT_PEER_LIMITS.maxTtlSec * 1000),
    configKey: "attach.peer_max_lease",
    bounds: { min: 1000 },
  },
];

export interface PeerHubSettings {
  /** Serve the peer routes. */
  enabled: boolean;
  /** Absolute path of the state file; undefined: in memory only. */
  stateFile: string | undefined;
  /** Registration caps and the longest lease. */
  limits: PeerLimits;
}

/** The caps: integers from 1 to 100,000, a lease from 1s to the longest timer; errors name the flag or key. */
function readLimits(flags: ReadonlyMap<string, FlagValue>, config: ReadonlyMap<string, unknown>): Result<PeerLimits> {
  const read = new SettingReader(PEER_FLAGS, flags, config);
  const maxPerCaller = read.int("attach-peer-max-per-caller");
  if (!maxPerCaller.ok) return maxPerCaller;
  const maxTotal = read.int("attach-peer-max-total");
  if (!maxTotal.ok) return maxTotal;
  const lease = read.duration("attach-peer-max-lease");
  if (!lease.ok) return lease;
  return ok({ maxPerCaller: maxPerCaller.value, maxTotal: maxTotal.value, maxTtlSec: lease.value / 1000 });
}

/**
 * Read both settings (flag, then config key) and check them: the hub flag must be a boolean,
 * the state file a non-empty string, and the state file needs the hub. A relative state-file
 * path is taken from `cwd`. The error names the flag or key.
 */
export function resolvePeerSettings(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
  cwd: string,
): Result<PeerHubSettings> {
  const read = new SettingReader(PEER_FLAGS, flags, config);
  const hub = read.setting("attach-peer-hub");
  const file = read.setting("attach-peer-state-file");
  if (hub !== undefined && typeof hub.value !== "boolean") return err(`${hub.from} must be true or false`);
  const enabled = hub?.value === true;
  const limits = readLimits(flags, config);
  if (!limits.ok) return limits;
  if (file === undefined) return ok({ enabled, stateFile: undefined, limits: limits.value });
  if (typeof file.value !== "string" || file.value.trim() === "")
    return err(`${file.from} must be a non-empty file path`);
  const combination = checkPeerCombination(enabled, file.from);
  if (!combination.ok) return combination;
  return ok({ enabled, stateFile: resolve(cwd, file.value.trim()), limits: limits.value });
}

/** The state file is only meaningful with the hub: refuse it alone, naming where it was set. */
export function checkPeerCombination(hubEnabled: boolean, stateFileFrom: string | undefined): Result<void> {
  if (stateFileFrom === undefined || hubEnabled) return ok(undefined);
  return err(
    `${stateFileFrom} needs the peer hub: add --attach-peer-hub (config attach.peer_hub: true) or drop the state file`,
  );
}
