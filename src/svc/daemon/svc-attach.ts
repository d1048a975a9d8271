/**
 * svc's operator attach surface (`--attach-listen`): the attach app `spar agent` serves (its
 * routes, guards and SSE, buildAttachApp through attach-server.ts), on the runtime core svc
 * shares, over TCP or a unix socket. Owns how svc's one token maps to an attach caller: the bearer
 * `SVC_ATTACH_TOKEN` is a one-entry caller table naming the operator `svc-attach`, a daemon admin,
 * so an operator reads every svc session (coordinators under `svc`, specialists under
 * `svc.<name>`, whoever owns them); without a token (loopback or a unix socket only, D228) every
 * request is that operator. Also owns the socket file: a stale one is replaced, a live one
 * refused, the new one made owner-only and removed at shutdown.
 */
import { chmodSync, lstatSync, unlinkSync } from "node:fs";
import { type AttachServer, startAttachServer, startAttachSocket } from "../../surfaces/attach/attach-server.ts";
import type { AttachContext } from "../../surfaces/attach/attach-context.ts";
import { browserParts } from "../../surfaces/attach/ui-routes.ts";
import { type Caller, type CallerAuthConfig, resolveCaller, sha256Hex } from "../../surfaces/http/caller-auth.ts";
import { parseAllowedHosts } from "../../surfaces/http/host-allowlist.ts";
import type { Logger } from "../../telemetry/logger.ts";
import type { StreamAdmission } from "../../surfaces/http/stream-admission.ts";
import { bindHostname } from "../../config/listen-address.ts";
import { type RuntimeCore, coreAttachParts } from "../../daemon/runtime-core.ts";
import type { AttachListenerSettings, SvcConfig } from "../../cli/svc-config.ts";
import { SPAR_VERSION } from "../../daemon/version.ts";

/** The operator behind `SVC_ATTACH_TOKEN` (or every request of a tokenless attach surface). */
export const SVC_ATTACH_IDENTITY = "svc-attach";

/** The caller of a tokenless attach surface: the operator, an admin (loopback or a socket file only). */
const TOKENLESS_OPERATOR: Caller = Object.freeze({ identity: SVC_ATTACH_IDENTITY, admin: true, source: "anonymous" });

/**
 * The per-caller layer of svc's attach surface. With a token: a caller table of one entry (the
 * token's SHA-256 naming `svc-attach`, an admin identity), anonymous callers refused, no proxies;
 * so a missing or unknown bearer is a 401. Without one: every request is the operator.
 */
export function svcAttachCaller(token: string | undefined): (request: Request, peer?: string) => Caller {
  if (token === undefined) return () => TOKENLESS_OPERATOR;
  const callers: CallerAuthConfig = {
    tokens: new Map([[sha256Hex(token), SVC_ATTACH_IDENTITY]]),
    adminIdentities: new Set([SVC_ATTACH_IDENTITY]),
    proxyIdentities: new Set(),
    assertableIdentities: new Set(),
    proxyMayAssertAdmins: false,
    allowAnonymous: false,
    proxyHeader: "x-asserted-caller",
  };
  return (request, peer) => resolveCaller(request, callers, undefined, peer);
}

export interface SvcAttachOptions {
  config: SvcConfig;
  settings: AttachListenerSettings;
  core: RuntimeCore;
  /** The workload, for the capabilities frame's daemon name. */
  workload: { name: string; description?: string | undefined };
  logger: Logger;
  /** The daemon's open-stream caps, shared with the A2A and AG-UI listeners (D334). */
  streams: StreamAdmission;
}

export interface SvcAttach {
  /** Hang up event streams, stop accepting, finish requests in flight (bounded), remove the socket file. */
  drain(timeoutMs: number): Promise<void>;
}

/** Build the attach context on svc's core and start listening; throws naming `--attach-listen` when it cannot. */
export async function startSvcAttach(options: SvcAttachOptions): Promise<SvcAttach> {
  const { settings, logger } = options;
  const context = svcAttachContext(options);
  const address = settings.address;
  if (address.kind === "unix") {
    await claimSocketPath(address.path);
    const server = await listening(() => startAttachSocket(context, address.path), `unix:${address.path}`);
    // Owner only: the socket file's permissions are this surface's guard without a token (D228).
    chmodSync(address.path, 0o600);
    logger.info(`attach surface at unix:${address.path} (${authShown(settings.token)})`);
    return {
      drain: async (timeoutMs) => {
        await server.drain(timeoutMs);
        removeSocket(address.path);
      },
    };
  }
  const hostname = bindHostname(address.address);
  const shown = hostname.includes(":") ? `[${hostname}]` : hostname;
  const server = await listening(
    () => startAttachServer(context, hostname, address.address.port),
    `${shown}:${address.address.port}`,
  );
  if (settings.token === undefined)
    logger.warn(
      `attach surface on ${shown}:${server.port} has no token: any local process can read and drive svc's sessions (set SVC_ATTACH_TOKEN)`,
    );
  logger.info(`attach surface at http://${shown}:${server.port} (${authShown(settings.token)})`);
  return { drain: (timeoutMs) => server.drain(timeoutMs) };
}

function authShown(token: string | undefined): string {
  return token === undefined ? "no token" : "bearer SVC_ATTACH_TOKEN";
}

/** The attach context of `spar agent`, filled from svc's core: no agent card, no peer hub, no read-only mode. */
function svcAttachContext(options: SvcAttachOptions): AttachContext {
  const { config, settings, core } = options;
  // The agent's defaults for what svc has no setting of (heartbeat, subscriber buffers).
  const base = config.agentDefaults;
  let allowedHosts: ReturnType<typeof parseAllowedHosts> | undefined;
  if (settings.token === undefined) {
    allowedHosts = parseAllowedHosts(config.limits.allowedHosts, "--attach-allowed-hosts (attach.allowed_hosts)");
    if (!allowedHosts.ok) throw new Error(allowedHosts.error);
  }
  return {
    sessions: core.sessions,
    daemon: {
      name: options.workload.name,
      version: SPAR_VERSION,
      description: options.workload.description || `spar svc running workload ${options.workload.name}`,
      model: config.model.name,
      provider: config.model.provider,
      // svc's spend limits are the workload's budget, not the core's cost ceilings (D229).
      costCeiling: false,
    },
    caller: svcAttachCaller(settings.token),
    checks: core.checks,
    heartbeatMs: base.heartbeatMs,
    idleTimeoutSeconds: config.limits.idleTimeoutSeconds,
    transport: {
      token: undefined,
      readonly: false,
      ...(allowedHosts?.ok ? { allowedHosts: allowedHosts.value } : {}),
      ...(config.limits.trustedProxies.length > 0 ? { trustedProxies: config.limits.trustedProxies } : {}),
    },
    streams: options.streams,
    identitiesRequired: settings.token !== undefined,
    ...browserParts(settings.ui, settings.token === undefined ? "none" : "bearer"),
    ...coreAttachParts(core, base),
  };
}

async function listening(start: () => Promise<AttachServer>, shown: string): Promise<AttachServer> {
  try {
    return await start();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `--attach-listen=${shown}: cannot listen there: the port or socket is taken, or the address is not this machine's (${reason})`,
    );
  }
}

/**
 * Make way for the socket: nothing there is fine; a socket nobody answers on (a daemon that did
 * not stop cleanly) is removed; a live socket or any other file is refused, never replaced.
 */
async function claimSocketPath(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  if (!isSocket)
    throw new Error(
      `--attach-listen=unix:${path}: a file that is not a socket is in the way (remove it, or choose another path)`,
    );
  if (await socketAnswers(path))
    throw new Error(`--attach-listen=unix:${path}: another process is listening on this socket`);
  unlinkSync(path);
}

async function socketAnswers(path: string): Promise<boolean> {
  try {
    const socket = await Bun.connect({ unix: path, socket: { data() {} } });
    socket.end();
    return true;
  } catch {
    return false;
  }
}

function removeSocket(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}
