/**
 * svc's A2A listener at startup (`--a2a-listen`; src/svc/a2a): refused when the workload does not
 * expose itself (`a2a.expose: true`) or declares `a2a.auth.required` while `SVC_A2A_TOKEN` is
 * unset; the token bucket of `SVC_A2A_RATE` / `_BURST`; the Host allowlist when it has no token;
 * listens and logs where. The listener stays up while the daemon drains (sends are answered with a
 * retryable -32000) and stops with the daemon.
 */
import { LOCAL_CALLER } from "../../surfaces/http/caller-auth.ts";
import { INJECT_CALLER } from "../listener/main-listener.ts";
import { listenOn } from "../../surfaces/http/guarded-app.ts";
import type { StreamAdmission } from "../../surfaces/http/stream-admission.ts";
import { parseAllowedHosts } from "../../surfaces/http/host-allowlist.ts";
import { RateLimiter } from "../../surfaces/http/rate-limiter.ts";
import { A2aTasks } from "../a2a/a2a-tasks.ts";
import { a2aListenerApp } from "../a2a/a2a-listener.ts";
import type { SvcRuntime } from "../dispatch/svc-runtime.ts";
import type { Workload } from "../workload/workload.ts";
import type { Logger } from "../../telemetry/logger.ts";
import { bindHostname } from "../../config/listen-address.ts";
import type { RuntimeCore } from "../../daemon/runtime-core.ts";
import type { SvcConfig } from "../../cli/svc-config.ts";
import { SPAR_VERSION } from "../../daemon/version.ts";

/** Why `--a2a-listen` cannot serve this workload, checked before anything starts. */
export function a2aRefusal(config: SvcConfig, workload: Workload): string | undefined {
  if (config.a2a === undefined) return undefined;
  if (!workload.a2a.expose)
    return `--a2a-listen: workload ${workload.name} does not expose itself over A2A (set a2a.expose: true in its bundle)`;
  if (workload.a2a.auth.required && config.a2a.token === undefined)
    return `--a2a-listen: workload ${workload.name} declares a2a.auth.required: set SVC_A2A_TOKEN`;
  return undefined;
}

export function serveA2a(
  config: SvcConfig,
  core: RuntimeCore,
  runtime: SvcRuntime,
  workload: Workload,
  logger: Logger,
  streams: StreamAdmission,
): ReturnType<typeof Bun.serve> | undefined {
  const settings = config.a2a;
  if (settings === undefined) return undefined;
  const named = parseAllowedHosts(config.limits.allowedHosts, "--attach-allowed-hosts (attach.allowed_hosts)");
  if (!named.ok) throw new Error(named.error);
  // Without a token the listener serves only these Hosts (DNS rebinding); with one, the cards
  // still repeat only these (D333).
  const allowedHosts = settings.token === undefined ? named : undefined;
  let listening: { host: string; port: number } | undefined;
  const app = a2aListenerApp({
    tasks: new A2aTasks({
      runtime,
      sessions: core.sessions,
      log: core.store,
      // The operator answers a task's questions through the main listener, as its caller.
      operator: (config.listen.token === undefined ? LOCAL_CALLER : INJECT_CALLER).identity,
    }),
    workloads: [workload],
    token: settings.token,
    limiter: settings.rate === undefined ? undefined : new RateLimiter(settings.rate),
    version: SPAR_VERSION,
    ...(allowedHosts ? { allowedHosts: allowedHosts.value } : {}),
    idleTimeoutSeconds: config.limits.idleTimeoutSeconds,
    cardOrigin: { vouched: named.value, own: () => listening },
    streams,
    ...(config.limits.trustedProxies.length > 0 ? { trustedProxies: config.limits.trustedProxies } : {}),
  });
  const hostname = bindHostname(settings.address);
  let server: ReturnType<typeof Bun.serve>;
  try {
    // Idle connections close after the shared idle timeout; the guard lifts it while a call runs.
    server = listenOn(app, { hostname, port: settings.address.port });
    listening = { host: hostname, port: server.port ?? settings.address.port };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`--a2a-listen: cannot listen there (${reason})`);
  }
  const shown = hostname.includes(":") ? `[${hostname}]` : hostname;
  const auth = settings.token === undefined ? "no token: loopback only" : "bearer SVC_A2A_TOKEN";
  const rate =
    settings.rate === undefined ? "no rate limit" : `${settings.rate.perSecond}/s burst ${settings.rate.burst}`;
  logger.info(`A2A listener at http://${shown}:${server.port} (${auth}, ${rate})`);
  return server;
}
