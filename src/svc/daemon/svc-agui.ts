/**
 * `--agui-listen`: svc's AG-UI listener (src/svc/agui) on its own address, built on the daemon's
 * runtime (the workload's coordinator sessions). Without `SVC_AGUI_TOKEN` (loopback only,
 * svc-config.ts) it serves the loopback Hosts and `--attach-allowed-hosts` (DNS rebinding). Logs
 * `AG-UI listener at http://HOST:PORT`; a workload that does not set `agui.expose` serves only an
 * empty discovery descriptor, and says so.
 */
import { LOCAL_CALLER } from "../../surfaces/http/caller-auth.ts";
import { listenOn } from "../../surfaces/http/guarded-app.ts";
import type { StreamAdmission } from "../../surfaces/http/stream-admission.ts";
import { parseAllowedHosts } from "../../surfaces/http/host-allowlist.ts";
import { INJECT_CALLER } from "../listener/main-listener.ts";
import { AguiRuns } from "../agui/agui-runs.ts";
import { aguiListenerApp } from "../agui/agui-listener.ts";
import type { SvcRuntime } from "../dispatch/svc-runtime.ts";
import type { Workload } from "../workload/workload.ts";
import type { Logger } from "../../telemetry/logger.ts";
import { bindHostname } from "../../config/listen-address.ts";
import type { SvcConfig } from "../../cli/svc-config.ts";

export interface SvcAgui {
  stop(): Promise<void>;
}

export function startSvcAgui(
  config: SvcConfig,
  runtime: SvcRuntime,
  workload: Workload,
  refuseWhileDraining: () => void,
  logger: Logger,
  streams: StreamAdmission,
): SvcAgui | undefined {
  const settings = config.agui;
  if (settings === undefined) return undefined;
  let allowedHosts: ReturnType<typeof parseAllowedHosts> | undefined;
  if (settings.token === undefined) {
    allowedHosts = parseAllowedHosts(config.limits.allowedHosts, "--attach-allowed-hosts (attach.allowed_hosts)");
    if (!allowedHosts.ok) throw new Error(allowedHosts.error);
  }
  const app = aguiListenerApp({
    workload,
    runs: new AguiRuns(
      runtime,
      workload.agui.sessionModel,
      (config.listen.token === undefined ? LOCAL_CALLER : INJECT_CALLER).identity,
    ),
    secret: settings.token,
    rate: settings.rate,
    refuseWhileDraining,
    ...(allowedHosts?.ok ? { allowedHosts: allowedHosts.value } : {}),
    ...(settings.allowedOrigins ? { allowedOrigins: settings.allowedOrigins } : {}),
    idleTimeoutSeconds: config.limits.idleTimeoutSeconds,
    streams,
  });
  const hostname = bindHostname(settings.address);
  let server: ReturnType<typeof Bun.serve>;
  try {
    // A run stream lasts as long as its turn: the guard lifts the idle timeout while it runs.
    server = listenOn(app, { hostname, port: settings.address.port });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `--agui-listen: cannot listen there: the port is taken, or the host is not an address of this machine (${reason})`,
    );
  }
  const shown = hostname.includes(":") ? `[${hostname}]` : hostname;
  if (!workload.agui.expose)
    logger.warn(`workload ${workload.name} does not set agui.expose: the AG-UI listener serves no run endpoint`);
  logger.info(
    `AG-UI listener at http://${shown}:${server.port} (${settings.token === undefined ? "no token" : "bearer SVC_AGUI_TOKEN"}${workload.agui.expose ? `, runs at ${workload.agui.endpointPath}` : ""})`,
  );
  return { stop: () => server.stop(true) };
}
