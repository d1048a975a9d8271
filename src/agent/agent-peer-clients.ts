/**
 * The agent's two peer clients, wired (D364-D367): `call_peer` in front of the runtime core's
 * tools, looking peers up in the daemon's own hub or the one `tools.call_peer.hub` names, on an
 * outbound guard carrying the operator's `outbound.allow` alone; and the registrar that keeps
 * this daemon registered with `--attach-peer-register`'s hub. A token variable either names but
 * leaves unset is a startup error (D366), as for `--attach-token`.
 */
import { SparError } from "../core/errors.ts";
import type { ToolCatalog, ToolRunner } from "../core/tool-catalog.ts";
import { parseOutboundAllowList } from "../net/outbound-allow-list.ts";
import { OutboundGuard } from "../net/outbound-guard.ts";
import { PeerCaller, PeerTools } from "../peers-client/call-peer-tool.ts";
import { PeerAttachClient } from "../peers-client/peer-attach-client.ts";
import { type CallPeerSettings, PEER_NAME, type PeerRegisterSettings } from "../peers-client/peer-client-flags.ts";
import { type PeerListing, localLookup, remoteLookup } from "../peers-client/peer-lookup.ts";
import { PeerRegistrar, type RegistrarLog } from "../peers-client/peer-registrar.ts";

type Env = Readonly<Record<string, string | undefined>>;

/** The variable's value; a named variable unset or empty stops the start, naming the setting. */
export function requiredToken(name: string | undefined, setting: string, env: Env): string | undefined {
  if (name === undefined) return undefined;
  const value = env[name];
  if (value === undefined || value.trim() === "")
    throw new SparError("bad_request", `${setting} names the environment variable ${name}, which is not set or empty`);
  return value;
}

/** What puts `call_peer` in front of the core's tools; undefined when the tool is off. */
export function peerCallTools(
  settings: CallPeerSettings | undefined,
  ownHub: { list(): readonly PeerListing[] } | undefined,
  outboundAllow: readonly string[],
  env: Env,
): ((inner: ToolRunner & ToolCatalog) => ToolRunner & ToolCatalog) | undefined {
  if (settings === undefined) return undefined;
  requiredToken(settings.tokenEnv, "--call-peer-token-env (tools.call_peer.token_env)", env);
  const allow = parseOutboundAllowList(outboundAllow);
  if (!allow.ok) throw new SparError("bad_request", allow.error);
  let lookup = settings.hub === undefined ? undefined : remoteLookup(settings.hub);
  if (lookup === undefined && ownHub !== undefined) lookup = localLookup(ownHub);
  if (lookup === undefined) throw new SparError("bad_request", "--call-peer needs a peer hub: set --call-peer-hub");
  const client = new PeerAttachClient(new OutboundGuard({ allow: allow.value }));
  const caller = new PeerCaller(lookup, client, settings, env);
  return (inner) => new PeerTools(inner, caller);
}

/** Where this daemon is reached: the configured endpoint, the card's external URL, or the bound address. */
export function registeredEndpoint(
  configured: string | undefined,
  externalUrl: string | undefined,
  bound: { scheme: "http" | "https"; host: string; port: number },
): string {
  if (configured !== undefined) return configured;
  if (externalUrl !== undefined) return externalUrl.replace(/\/+$/, "");
  const host = bound.host;
  if (host === "" || host === "0.0.0.0" || host === "::" || host === "[::]")
    throw new SparError(
      "bad_request",
      `--attach-peer-register needs the address peers reach this daemon at: it listens on every interface (${host || "0.0.0.0"}); set --attach-peer-register-endpoint (attach.peer_register.endpoint) or --agent-card-external-url`,
    );
  const shown = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return `${bound.scheme}://${shown}:${bound.port}`;
}

/** Who this daemon registers as and where it is reached. */
export interface RegistrationIdentity {
  cardName: string;
  externalUrl: string | undefined;
  bound: { scheme: "http" | "https"; host: string; port: number };
}

/**
 * Before anything starts: the token variable is set, the name is a peer name and an address can
 * be registered (a wildcard bind needs an endpoint). Throws the startup error.
 */
export function checkPeerRegistration(
  settings: PeerRegisterSettings | undefined,
  identity: RegistrationIdentity,
  env: Env,
): void {
  if (settings === undefined) return;
  requiredToken(settings.tokenEnv, "--attach-peer-register-token-env (attach.peer_register.token_env)", env);
  const name = settings.name ?? identity.cardName;
  if (!PEER_NAME.test(name))
    throw new SparError(
      "bad_request",
      `--attach-peer-register: the agent card's name ${JSON.stringify(name)} is not a peer name (letters, digits, _ . -, at most 64); set --attach-peer-register-name`,
    );
  registeredEndpoint(settings.endpoint, identity.externalUrl, identity.bound);
}

/** Start the registration loop (checked by checkPeerRegistration); undefined without `--attach-peer-register`. */
export function startPeerRegistrar(
  settings: PeerRegisterSettings | undefined,
  identity: RegistrationIdentity,
  log: RegistrarLog,
  env: Env,
): PeerRegistrar | undefined {
  if (settings === undefined) return undefined;
  const bearer = requiredToken(
    settings.tokenEnv,
    "--attach-peer-register-token-env (attach.peer_register.token_env)",
    env,
  );
  const name = settings.name ?? identity.cardName;
  const registrar = new PeerRegistrar({
    hub: settings.hub,
    bearer,
    registration: {
      name,
      endpoint: registeredEndpoint(settings.endpoint, identity.externalUrl, identity.bound),
      labels: settings.labels,
      leaseSec: settings.leaseSeconds,
    },
    log,
  });
  registrar.start();
  return registrar;
}
