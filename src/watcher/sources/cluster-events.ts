/**
 * The `cluster-events` source: core/v1 Events through a restarting ListWatch, scoped with a field
 * selector that leaves out `--exclude-namespace` (the deny-list narrows the watch; the allow-list
 * filters afterwards). The initial list is history and emits nothing; ADDED and MODIFIED after it
 * become signals (a repeat arrives as MODIFIED with count+1).
 */
import type { Logger } from "../../telemetry/logger.ts";
import { eventToSignal } from "../core/event-signal.ts";
import type { Signal } from "../core/signal.ts";
import type { KubeConnection } from "../kube/kube-connection.ts";
import { RestartingInformer } from "./restarting-informer.ts";
import type { SourceRunner } from "./source-runner.ts";

export function eventFieldSelector(excludeNamespaces: Iterable<string>): string | undefined {
  const parts = [...excludeNamespaces].sort().map((namespace) => `metadata.namespace!=${namespace}`);
  return parts.length > 0 ? parts.join(",") : undefined;
}

export class ClusterEventsSource implements SourceRunner {
  private readonly informer: RestartingInformer;

  constructor(
    connection: KubeConnection,
    excludeNamespaces: Iterable<string>,
    emit: (signal: Signal) => void,
    logger: Logger,
    onRestart: () => void,
  ) {
    const forward = (object: Record<string, unknown>) => {
      const signal = eventToSignal(object);
      if (signal) emit(signal);
    };
    this.informer = new RestartingInformer(
      "cluster-events",
      connection,
      "/api/v1/events",
      { add: (object, initial) => (initial ? undefined : forward(object)), update: forward },
      logger,
      onRestart,
      eventFieldSelector(excludeNamespaces),
    );
  }

  readonly name = "cluster-events";

  get synced(): boolean {
    return this.informer.synced;
  }

  get lastError(): string | undefined {
    return this.informer.lastError;
  }

  start(): Promise<void> {
    return this.informer.start();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }
}
