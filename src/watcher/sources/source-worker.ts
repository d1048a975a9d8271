/**
 * The worker side of one source (D413): answers the source channel's handshake by building the
 * source from its init (buildSource, as the main thread would), starts it, and forwards what it
 * does: each signal, each clearance report (D437), each watch restart, each log line, and its readiness whenever that changes
 * (checked after start and every STATE_CHECK_MS). `stop` stops the source and answers.
 */
import { RpcConnection } from "../../rpc/rpc-connection.ts";
import { workerScopeTransport } from "../../rpc/worker-port-transport.ts";
import type { Logger } from "../../telemetry/logger.ts";
import { buildSource } from "./build-source.ts";
import { SourceRefusal, type SourceRunner } from "./source-runner.ts";
import { type ConnectionData, SOURCE_CHANNEL, type SourceWorkerInit } from "./source-channel.ts";
import type { KubeConnection } from "../kube/kube-connection.ts";
import { readFileSync } from "node:fs";

const STATE_CHECK_MS = 250;
/** How often a source's gauge series are compared with the last sent (a scrape reads the last). */
const SERIES_CHECK_MS = 2000;

/** The connection from its data: a token file is re-read per request, as on the main thread. */
export function connectionFromData(data: ConnectionData): KubeConnection {
  const { tokenFile, token } = data;
  return {
    server: data.server,
    tls: data.tls,
    token: () => (tokenFile ? readFileSync(tokenFile, "utf8").trim() : token),
    ...(tokenFile ? { tokenFile } : {}),
  };
}

export function serveSourceWorker(scope: Worker): void {
  let source: SourceRunner | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let last = "";
  let lastSeries = "";
  let seriesTimer: ReturnType<typeof setInterval> | undefined;
  const main = RpcConnection.accept(SOURCE_CHANNEL, workerScopeTransport(scope), {
    onHello: (init) => {
      source = build(init);
      const started = () => {
        report();
        sendSeries();
        main.notify("started", {});
      };
      void source.start().then(started, (error) => {
        if (error instanceof SourceRefusal) {
          main.notify("refused", { message: error.message });
          return;
        }
        logger.error(`source ${init.name}: start failed: ${error instanceof Error ? error.message : String(error)}`);
        started();
      });
      timer = setInterval(report, STATE_CHECK_MS);
      if (source.series) seriesTimer = setInterval(sendSeries, SERIES_CHECK_MS);
    },
  });
  const logger: Logger = {
    debug: (message) => main.notify("log", { level: "debug", message }),
    info: (message) => main.notify("log", { level: "info", message }),
    warn: (message) => main.notify("log", { level: "warn", message }),
    error: (message) => main.notify("log", { level: "error", message }),
  };
  const report = () => {
    if (!source) return;
    const state = { synced: source.synced, ...(source.lastError ? { lastError: source.lastError } : {}) };
    const text = JSON.stringify(state);
    if (text === last) return;
    last = text;
    main.notify("state", state);
  };
  const sendSeries = () => {
    const families = source?.series?.() ?? [];
    const text = JSON.stringify(families);
    if (text === lastSeries) return;
    lastSeries = text;
    main.notify("series", { families });
  };
  const build = (init: SourceWorkerInit) =>
    buildSource(init.name, {
      values: new Map(init.values),
      env: init.env,
      connection: connectionFromData(init.connection),
      without: new Set(init.without),
      emit: (signal) => main.notify("signal", { signal }),
      logger,
      onRestart: () => main.notify("restart", {}),
      clearance: (report) => main.notify("clearance", report),
    });
  main.handle("stop", async () => {
    clearInterval(timer);
    clearInterval(seriesTimer);
    await source?.stop();
    return undefined;
  });
}
