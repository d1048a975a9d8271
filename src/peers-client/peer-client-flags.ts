/**
 * The flags and config keys of the two peer clients: `call_peer` (`tools.call_peer.*`, D364)
 * and the daemon's own registration with a hub (`attach.peer_register.*`, D367), read into typed
 * settings and checked (URLs absolute http(s), a plain peer name, `k=v` labels). Whether a named
 * token variable is set is checked at startup by the daemon (agent-daemon.ts), which holds the
 * environment. Flags win over the config file. Owns no behavior.
 */
import { type Result, err, ok } from "../core/result.ts";
import type { FlagSpec, FlagValue } from "../config/flag-spec.ts";
import { SettingReader } from "../config/setting-reader.ts";

export const DEFAULT_CALL_PEER_TIMEOUT_SECONDS = 120;
export const DEFAULT_CALL_PEER_MAX_RESPONSE_BYTES = 64 * 1024;
export const DEFAULT_PEER_LEASE_SECONDS = 60;

export const PEER_CLIENT_FLAGS: readonly FlagSpec[] = [
  {
    name: "call-peer",
    kind: "bool",
    help: "offer the model call_peer: delegate a prompt to a peer agent registered with the peer hub, by name",
    defaultText: "false",
    configKey: "tools.call_peer.enabled",
  },
  {
    name: "call-peer-hub",
    kind: "string",
    help: "base URL of the peer hub call_peer looks peers up in",
    defaultText: "this daemon's own hub (needs --attach-peer-hub)",
    configKey: "tools.call_peer.hub",
  },
  {
    name: "call-peer-token-env",
    kind: "string",
    help: "environment variable holding the bearer call_peer sends to the hub and the peers (named but unset: a startup error)",
    defaultText: "none: no credentials sent",
    configKey: "tools.call_peer.token_env",
  },
  {
    name: "call-peer-timeout-seconds",
    kind: "int",
    help: "one deadline over a whole call_peer call: the hub lookup, the session, the inject and the peer's turn",
    defaultValue: String(DEFAULT_CALL_PEER_TIMEOUT_SECONDS),
    configKey: "tools.call_peer.timeout_seconds",
    bounds: { min: 1, max: 86_400 },
  },
  {
    name: "call-peer-max-response-bytes",
    kind: "int",
    help: "the peer's answer text kept for the model; the rest is cut and truncated set",
    defaultValue: String(DEFAULT_CALL_PEER_MAX_RESPONSE_BYTES),
    configKey: "tools.call_peer.max_response_bytes",
    bounds: { min: 1, max: 16 * 1024 * 1024 },
  },
  {
    name: "attach-peer-register",
    kind: "string",
    help: "register this daemon with the peer hub at this base URL: heartbeats, re-registration after a hub restart, deregistration at shutdown",
    configKey: "attach.peer_register.hub",
  },
  {
    name: "attach-peer-register-token-env",
    kind: "string",
    help: "environment variable holding the bearer sent to that hub (named but unset: a startup error)",
    defaultText: "none: no credentials sent",
    configKey: "attach.peer_register.token_env",
  },
  {
    name: "attach-peer-register-name",
    kind: "string",
    help: "the name registered (letters, digits, _ . -, at most 64)",
    defaultText: "the agent card's name",
    configKey: "attach.peer_register.name",
  },
  {
    name: "attach-peer-register-endpoint",
    kind: "string",
    help: "the attach base URL registered, as peers reach it",
    defaultText: "--agent-card-external-url, else the bound listen address (a wildcard bind needs this flag)",
    configKey: "attach.peer_register.endpoint",
  },
  {
    name: "attach-peer-register-labels",
    kind: "string",
    help: "labels registered, k=v comma-separated (config: an object of string to string); protocol=attach is added unless set",
    configKey: "attach.peer_register.labels",
  },
  {
    name: "attach-peer-register-lease-seconds",
    kind: "int",
    help: "the lease asked for; heartbeats go at a third of the lease the hub grants",
    defaultValue: String(DEFAULT_PEER_LEASE_SECONDS),
    configKey: "attach.peer_register.lease_seconds",
    bounds: { min: 1, max: 86_400 },
  },
];

export interface CallPeerSettings {
  /** The hub's base URL; undefined: the daemon's own hub. */
  hub: string | undefined;
  tokenEnv: string | undefined;
  timeoutMs: number;
  maxResponseBytes: number;
}

export interface PeerRegisterSettings {
  hub: string;
  tokenEnv: string | undefined;
  /** Undefined: the agent card's name. */
  name: string | undefined;
  /** Undefined: the card's external URL, else the bound address. */
  endpoint: string | undefined;
  labels: Record<string, string>;
  leaseSeconds: number;
}

export interface PeerClientSettings {
  callPeer: CallPeerSettings | undefined;
  peerRegister: PeerRegisterSettings | undefined;
}

/** A registrable peer name (what call_peer accepts from a hub too). */
export const PEER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** An absolute http or https URL with a host, else an error naming where it was set. */
export function httpBaseUrl(text: string, from: string): Result<string> {
  if (!URL.canParse(text)) return err(`${from} must be an absolute http or https URL, got ${JSON.stringify(text)}`);
  const url = new URL(text);
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "")
    return err(`${from} must be an absolute http or https URL with a host, got ${JSON.stringify(text)}`);
  return ok(text.replace(/\/+$/, ""));
}

/** `k=v,k=v` into labels; keys and values trimmed, a key non-empty. */
export function parseLabels(text: string, from: string): Result<Record<string, string>> {
  const labels: Record<string, string> = {};
  for (const item of text.split(",")) {
    if (item.trim() === "") continue;
    const equals = item.indexOf("=");
    const key = equals < 0 ? "" : item.slice(0, equals).trim();
    if (key === "") return err(`${from}: ${JSON.stringify(item.trim())} is not k=v`);
    labels[key] = item.slice(equals + 1).trim();
  }
  return ok(labels);
}

const LABELS_KEY = "attach.peer_register.labels";

/** The labels: the flag (`k=v,...`), else the config object (flattened keys) or a `k=v,...` string. */
function readLabels(read: SettingReader, config: ReadonlyMap<string, unknown>): Result<Record<string, string>> {
  const found = read.setting("attach-peer-register-labels");
  if (found !== undefined) {
    if (typeof found.value !== "string") return err(`${found.from} must be k=v pairs or an object of string to string`);
    return parseLabels(found.value, found.from);
  }
  const labels: Record<string, string> = {};
  for (const key of [...config.keys()].filter((name) => name.startsWith(`${LABELS_KEY}.`))) {
    const value = config.get(key);
    if (typeof value !== "string") return err(`config key ${key} must be a string`);
    labels[key.slice(LABELS_KEY.length + 1)] = value;
  }
  return ok(labels);
}

function need<T>(result: Result<T>): T {
  if (!result.ok) throw new SettingProblem(result.error);
  return result.value;
}

class SettingProblem extends Error {}

function optionalString(read: SettingReader, name: string): string | undefined {
  const value = need(read.string(name, ""));
  return value === "" ? undefined : value;
}

function callPeerSettings(read: SettingReader, hubEnabled: boolean): CallPeerSettings | undefined {
  // Every key is read (and checked) also when the tool is off: none is reported as unread.
  const enabled = need(read.bool("call-peer", false));
  const hubText = optionalString(read, "call-peer-hub");
  const hub = hubText === undefined ? undefined : need(httpBaseUrl(hubText, read.from("call-peer-hub")));
  const tokenEnv = optionalString(read, "call-peer-token-env");
  const timeoutMs = need(read.int("call-peer-timeout-seconds")) * 1000;
  const maxResponseBytes = need(read.int("call-peer-max-response-bytes"));
  if (!enabled) return undefined;
  if (hub === undefined && !hubEnabled)
    throw new SettingProblem(
      `${read.from("call-peer")} needs a peer hub: set --call-peer-hub (tools.call_peer.hub) or run this daemon's own with --attach-peer-hub`,
    );
  return { hub, tokenEnv, timeoutMs, maxResponseBytes };
}

function registerSettings(read: SettingReader, config: ReadonlyMap<string, unknown>): PeerRegisterSettings | undefined {
  const hubText = optionalString(read, "attach-peer-register");
  const endpointText = optionalString(read, "attach-peer-register-endpoint");
  const name = optionalString(read, "attach-peer-register-name");
  const labels = need(readLabels(read, config));
  const leaseSeconds = need(read.int("attach-peer-register-lease-seconds"));
  const tokenEnv = optionalString(read, "attach-peer-register-token-env");
  if (hubText === undefined) return undefined;
  if (name !== undefined && !PEER_NAME.test(name))
    throw new SettingProblem(
      `${read.from("attach-peer-register-name")} must be letters, digits, _ . - (at most 64), got ${JSON.stringify(name)}`,
    );
  return {
    hub: need(httpBaseUrl(hubText, read.from("attach-peer-register"))),
    tokenEnv,
    name,
    endpoint:
      endpointText === undefined
        ? undefined
        : need(httpBaseUrl(endpointText, read.from("attach-peer-register-endpoint"))),
    labels: { protocol: "attach", ...labels },
    leaseSeconds,
  };
}

/** Read both blocks; `hubEnabled` is whether this daemon serves its own hub. Errors name the flag or key. */
export function resolvePeerClientSettings(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
  hubEnabled: boolean,
): Result<PeerClientSettings> {
  const read = new SettingReader(PEER_CLIENT_FLAGS, flags, config);
  try {
    return ok({ callPeer: callPeerSettings(read, hubEnabled), peerRegister: registerSettings(read, config) });
  } catch (error) {
    if (error instanceof SettingProblem) return err(error.message);
    throw error;
  }
}
