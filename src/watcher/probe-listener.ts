/**
 * The watcher's probe listener as an app on the shared guards (guardedApp, as every listener):
 * `GET /healthz`, `/readyz` and `/metrics`, no authentication gate, so the DNS-rebinding guard
 * answers only loopback names, `--metrics-allowed-hosts` names and (bound beyond loopback, as in a
 * pod where the kubelet probes the pod IP) address literals. The shared error mapper answers an
 * unknown path 404 and another method 405 with `Allow`, both JSON; the probes' own answers stay
 * the plain text probes and scrapers read.
 */
import { Elysia } from "elysia";
import { LOCAL_CALLER } from "../surfaces/http/caller-auth.ts";
import { PROBE_IDLE_TIMEOUT_SECONDS } from "../surfaces/http/connection-deadlines.ts";
import { bindHostname, isLoopbackHost, parseListenAddress } from "../config/listen-address.ts";
import { guardedApp, listenOn } from "../surfaces/http/guarded-app.ts";
import { type HostAllowlist, parseAllowedHosts } from "../surfaces/http/host-allowlist.ts";
import type { WatcherGroup } from "./watcher-group.ts";

/** What the probes read of the running watcher. */
export type ProbedWatcher = Pick<WatcherGroup, "notReady" | "degraded" | "sourceLines" | "render">;

export function probeApp(allowedHosts: HostAllowlist, watcher: ProbedWatcher) {
  return guardedApp({
    transport: { token: undefined, readonly: false, allowedHosts },
    resolveCaller: () => LOCAL_CALLER,
    publicPaths: new Set(["/healthz", "/readyz", "/metrics"]),
    // Probes send no body and answer at once: a silent connection is closed sooner (D331).
    idleTimeoutSeconds: PROBE_IDLE_TIMEOUT_SECONDS,
  }).use(probeRoutes(watcher));
}

function probeRoutes(watcher: ProbedWatcher) {
  return new Elysia({ name: "spar.watcher-probes" })
    .get("/healthz", () => new Response("ok\n"))
    .get("/readyz", () => {
      // Optional watches that fail never hold readiness; they are named after the verdict.
      // Then every source and its state, then what runs degraded (D413).
      const why = watcher.notReady();
      const notes = [...watcher.sourceLines(), ...watcher.degraded().map((line) => `degraded: ${line}`)]
        .map((line) => `${line}\n`)
        .join("");
      return why === undefined
        ? new Response(`ok\n${notes}`)
        : new Response(`not ready: ${why}\n${notes}`, { status: 503 });
    })
    .get(
      "/metrics",
      () => new Response(watcher.render(), { headers: { "content-type": "text/plain; version=0.0.4" } }),
    );
}

/** The probe listener on its address (`--metrics-addr`), listening through its app. */
export function serveProbes(address: string, allowedHosts: readonly string[], watcher: WatcherGroup) {
  const parsed = parseListenAddress(address);
  if (!parsed.ok) throw new Error(parsed.error);
  const hostname = bindHostname(parsed.value);
  const allowlist = parseAllowedHosts(allowedHosts, "--metrics-allowed-hosts", !isLoopbackHost(parsed.value.host));
  if (!allowlist.ok) throw new Error(allowlist.error);
  return listenOn(probeApp(allowlist.value, watcher), { hostname, port: parsed.value.port });
}
