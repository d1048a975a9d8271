/**
 * The main <-> source-worker channel (D413): the only thing that crosses that boundary. The
 * handshake's init names the source and carries what it is built from (the flag values, the
 * environment, the connection as data, the plan's left-out watches); the worker answers `stop`,
 * and says `signal` for every signal its source emits, `started` once its start finished, `state` when its readiness
 * or latest error changes, `restart` when a watch restarted, `series` with the gauges its detector reports, `clearance` when a condition it paged on
 * opened or cleared, `log` for each line its source writes
 * (the main thread's logger writes it, so the log stays one stream). Types plus the channel.
 */
import type { FlagValue } from "../../config/flag-spec.ts";
import type { LogLevel } from "../../telemetry/logger.ts";
import type { ClearanceReport } from "../core/open-conditions.ts";
import type { Signal } from "../core/signal.ts";
import type { SeriesFamily } from "../core/source-spec.ts";
import {
  type NoNotifications,
  type NoParams,
  type NoRequests,
  type RpcMethod,
  defineChannel,
} from "../../rpc/rpc-channel.ts";

/** A KubeConnection as data: a token function does not cross a thread, its source does. */
export interface ConnectionData {
  server: string;
  tls: Record<string, unknown>;
  /** Re-read per request, as the main thread would (a rotated service-account token). */
  tokenFile?: string;
  token?: string;
}

export interface SourceWorkerInit {
  name: string;
  values: Array<[string, FlagValue]>;
  env: Record<string, string | undefined>;
  connection: ConnectionData;
  without: string[];
}

export interface SourceState {
  synced: boolean;
  lastError?: string;
}

/** What the main thread accepts from a source worker. */
export type SourceMainSide = {
  requests: NoRequests;
  notifications: {
    signal: { signal: Signal };
    state: SourceState;
    /** The source's start finished (its watches listed once, or failed to): its first state follows. */
    started: NoParams;
    /** The source cannot run with these flags or this environment (a SourceRefusal): no restart. */
    refused: { message: string };
    restart: NoParams;
    log: { level: LogLevel; message: string };
    /** The gauge series its detector reports (D409), when they changed; /metrics reads the last. */
    series: { families: SeriesFamily[] };
    /** A condition the source paged on opened or cleared (D437), for recovery. */
    clearance: ClearanceReport;
  };
};

/** What a source worker answers. */
export type SourceWorkerSide = {
  requests: {
    /** Stop the source's watches, polls and timers; answered when they stopped. */
    stop: RpcMethod<NoParams, undefined>;
  };
  notifications: NoNotifications;
};

export const SOURCE_CHANNEL = defineChannel<SourceMainSide, SourceWorkerSide, SourceWorkerInit>("source worker", 1);
