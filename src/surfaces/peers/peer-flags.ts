/**
 * The peer hub's flags and config keys, and the check of their combination: the state file
 * without the hub is a startup error (spec "Peer hub"). Flags win over the config file, as for
 * every agent flag. Owns no parsing of argv (cli/flags.ts) and no hub behavior (peer-hub.ts).
 */
import { resolve } from "node:path";
import { type Result, err, ok } from "../../core/result.ts";
import type { FlagSpec, FlagValue } from "../../cli/flags.ts";
import { settingOf } from "../../cli/flag-setting.ts";

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
];

export interface PeerHubSettings {
  /** Serve the peer routes. */
  enabled: boolean;
  /** Absolute path of the state file; undefined: in memory only. */
  stateFile: string | undefined;
}

/**
 * Read both settings (flag, then config key) and check them: the hub flag must be a boolean,
 * the state file a non-empty string, and the state file needs the hub. A relative state-file
 * path is taken from `cwd`. The error names the flag or key.
 */
export function resolvePeerSettings(flags: ReadonlyMap<string, FlagValue>, config: ReadonlyMap<string, unknown>, cwd: string): Result<PeerHubSettings> {
  const [hubSpec, fileSpec] = PEER_FLAGS as readonly [FlagSpec, FlagSpec];
  const hub = settingOf(flags, config, hubSpec);
  const file = settingOf(flags, config, fileSpec);
  if (hub !== undefined && typeof hub.value !== "boolean") return err(`${hub.from} must be true or false`);
  const enabled = hub?.value === true;
  if (file === undefined) return ok({ enabled, stateFile: undefined });
  if (typeof file.value !== "string" || file.value.trim() === "") return err(`${file.from} must be a non-empty file path`);
  const combination = checkPeerCombination(enabled, file.from);
  if (!combination.ok) return combination;
  return ok({ enabled, stateFile: resolve(cwd, file.value.trim()) });
}

/** The state file is only meaningful with the hub: refuse it alone, naming where it was set. */
export function checkPeerCombination(hubEnabled: boolean, stateFileFrom: string | undefined): Result<void> {
  if (stateFileFrom === undefined || hubEnabled) return ok(undefined);
  return err(`${stateFileFrom} needs the peer hub: add --attach-peer-hub (config attach.peer_hub: true) or drop the state file`);
}
