/**
 * What the watcher runs for one source, whoever built it: a contract source's DetectorSource
 * (D375), or a source whose inputs are not the Kubernetes API (an HTTP receiver, a poller of
 * the agent daemon) built by its own factory in source-registry.ts. Every factory is given
 * the same context, which holds only what can cross a thread: a source is started from its
 * name, the flag values and this context, on the main thread or in its worker alike.
 */
import type { FlagValue } from "../../config/flag-spec.ts";
import type { Logger } from "../../telemetry/logger.ts";
import type { ClearanceReport } from "../core/open-conditions.ts";
import type { Signal } from "../core/signal.ts";
import type { SeriesFamily } from "../core/source-spec.ts";
import type { KubeConnection } from "../kube/kube-connection.ts";

export interface SourceRunner {
  readonly name: string;
  /** Ready for /readyz: every watch has listed once, a receiver is listening (a poller is ready at once). */
  readonly synced: boolean;
  /** The latest failure, until it recovers. */
  readonly lastError: string | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Gauge series the source reports, read at scrape time (D409); a worker host answers from its last snapshot. */
  series?(): SeriesFamily[];
}

export interface SourceRunnerContext {
  /** Every watcher flag's effective value (durations in ms), as the settings readers take them. */
  values: ReadonlyMap<string, FlagValue>;
  /** The environment the watcher started with (a source reads the tokens its flags name from it). */
  env: Readonly<Record<string, string | undefined>>;
  connection: KubeConnection;
  /** Names of the source's polls and watches the startup plan left out. */
  without: ReadonlySet<string>;
  emit(signal: Signal): void;
  logger: Logger;
  /** A watch or poll restarted after a failure (counted). */
  onRestart(): void;
  /** A condition the source paged on opened or cleared (D437); absent, nobody asks. */
  clearance?(report: ClearanceReport): void;
  now?: () => number;
}

/**
 * Thrown by a factory whose source cannot start with these flags or this environment (a token
 * variable unset): the watcher refuses to start, naming it, as for a missing grant (D402).
 */
export class SourceRefusal extends Error {}

export type SourceRunnerFactory = (context: SourceRunnerContext) => SourceRunner;
