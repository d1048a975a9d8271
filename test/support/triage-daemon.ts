/**
 * The `spar agent` the watcher's end-to-end tests inject into: multi-session with a token table
 * where `watcher` is a proxy that asserts the on-call owner, and a reader of what was injected
 * into a session (agent rows whose text is an incident payload), read as that owner; and the
 * whole setup those tests share (a fake apiserver, a kubeconfig for it, the daemon) with a
 * watcher started against it.
 */
import { afterAll, beforeAll } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../src/cli/watcher-config.ts";
import { sha256Hex } from "../../src/surfaces/http/caller-auth.ts";
import { createLogger } from "../../src/telemetry/logger.ts";
import type { DeliveryPolicy } from "../../src/watcher/core/delivery-policy.ts";
import { type RunningWatcher, startWatcher } from "../../src/watcher/watch-runner.ts";
import { type Daemon, startDaemon, tempDir, waitFor } from "./daemon.ts";
import { writeKubeconfig } from "./kube.ts";
import { collect } from "./sse-client.ts";

export const OWNER = "oncall@example.com";
export const ONCALL_TOKEN = "tok-oncall";
/** The watcher's environment: its bearer token for the daemon. */
export const WATCHER_ENV = { WATCHER_TOKEN: "tok-watcher" };

/** `listen` and `sessionDb` restart a daemon where an earlier one ran (same port, same store). */
export async function startTriageDaemon(
  dir: string,
  options: { listen?: string; sessionDb?: string } = {},
): Promise<Daemon> {
  return startDaemon({
    args: triageAuthArgs(dir),
    env: WATCHER_ENV,
    ...options,
  });
}

/**
 * The triage daemon's authentication, written into `dir`: the watcher (token in WATCHER_TOKEN)
 * as a proxy identity and the on-call owner with its own token. Returns the daemon's flags.
 */
export function triageAuthArgs(dir: string): string[] {
  const table = join(dir, "callers.yaml");
  writeFileSync(
    table,
    [
      "callers:",
      "  - identity: watcher",
      "    token_env: WATCHER_TOKEN",
      `  - identity: ${OWNER}`,
      `    token_sha256: ${sha256Hex(ONCALL_TOKEN)}`,
      "",
    ].join("\n"),
  );
  writeFileSync(
    join(dir, "config.json"),
    JSON.stringify({ attach: { multi_session: { auth: { proxy_identities: ["watcher"] } } } }),
  );
  return ["--multi-session", `--auth-table=${table}`, `--config=${join(dir, "config.json")}`];
}

/** The payloads injected into a session once at least `count` distinct ones arrived. */
export async function injectedPayloads(
  daemon: Daemon,
  sessionId: string,
  count: number,
): Promise<Array<Record<string, unknown>>> {
  const stream = collect(`${daemon.baseUrl}/sessions/${sessionId}/events?since=0`, {
    headers: { authorization: `Bearer ${ONCALL_TOKEN}` },
  });
  // Injects that queue while a turn runs reach the model as one numbered bundle (inbox-bundle.ts):
  // each of its lines after the first is one payload.
  const texts = () =>
    stream.frames
      .filter((frame) => frame.event === "agent")
      .flatMap((frame) => {
        const text = ((frame.data.event as { Content?: { parts?: Array<{ text?: string }> } }).Content?.parts ?? [])
          .map((part) => part.text ?? "")
          .join("");
        return text.startsWith("[")
          ? text
              .split("\n")
              .slice(1)
              .map((line) => line.replace(/^\d+\. /, ""))
          : [text];
      })
      .filter((text) => text.startsWith('{"kind"'));
  try {
    await waitFor(
      () => (new Set(texts()).size >= count ? true : undefined),
      15_000,
      `${count} injects in ${sessionId}`,
    );
    return [...new Set(texts())].map((text) => JSON.parse(text) as Record<string, unknown>);
  } finally {
    stream.close();
  }
}

export interface TriageSetup {
  api: FakeApiserver;
  /** Absent when the set-up was asked without one (`daemon: false`). */
  daemon: Daemon | undefined;
  dir: string;
  /** A kubeconfig reaching `api` with the watcher's service-account token. */
  kubeconfig: string;
}

/** A fake apiserver that knows the watcher's token, a kubeconfig for it, and (unless told not to) the triage daemon. */
export async function startTriageSetup(options: { daemon?: boolean } = {}): Promise<TriageSetup> {
  const dir = tempDir();
  const api = await startFakeApiserver({ tokens: { "kube-token": "system:serviceaccount:agent-triage:watcher" } });
  const kubeconfig = writeKubeconfig(join(dir, "kubeconfig"), { server: api.url, token: "kube-token" });
  const daemon = options.daemon === false ? undefined : await startTriageDaemon(dir);
  return { api, daemon, dir, kubeconfig };
}

export async function stopTriageSetup(setup: TriageSetup): Promise<void> {
  await setup.daemon?.sigterm();
  await setup.api.stop();
}

export interface TriageScope {
  readonly api: FakeApiserver;
  /** The triage daemon (a scope asked with `daemon: false` has none: reading it throws). */
  readonly daemon: Daemon;
  readonly dir: string;
  readonly kubeconfig: string;
}

/**
 * The triage set-up of a whole test file: declared at its top level, started before the file's
 * first test and stopped after its last.
 */
export function triageScope(options: { daemon?: boolean } = {}): TriageScope {
  let setup: TriageSetup | undefined;
  beforeAll(async () => {
    setup = await startTriageSetup(options);
  }, 30_000);
  afterAll(async () => {
    if (setup) await stopTriageSetup(setup);
  });
  const started = (): TriageSetup => {
    if (!setup) throw new Error("the triage set-up is read before it started (beforeAll)");
    return setup;
  };
  return {
    get api() {
      return started().api;
    },
    get daemon() {
      const daemon = started().daemon;
      if (!daemon) throw new Error("this triage scope was started without a daemon");
      return daemon;
    },
    get dir() {
      return started().dir;
    },
    get kubeconfig() {
      return started().kubeconfig;
    },
  };
}

/**
 * A watcher injecting into `target` (the triage daemon, or the URL of something in front of one)
 * as the on-call owner for cluster `kind-test`, reading `kubeconfig`, after its informers synced;
 * `extra` flags come last. Its log lines are kept.
 */
export async function startTriageWatcher(
  target: Daemon | string,
  kubeconfig: string,
  extra: readonly string[],
  options: { recoveryTickMs?: number; now?: () => number; deliveryPolicy?: DeliveryPolicy } = {},
): Promise<{ running: RunningWatcher; log: string[] }> {
  const args = [
    `--daemon-url=${typeof target === "string" ? target : target.baseUrl}`,
    "--token-env=WATCHER_TOKEN",
    `--owner=${OWNER}`,
    "--cluster-name=kind-test",
    `--kubeconfig=${kubeconfig}`,
    ...extra,
  ];
  const config = watcherConfigFromArgv(args);
  if (!config.ok) throw new Error(config.error);
  const log: string[] = [];
  const running = await startWatcher(
    config.value,
    createLogger("debug", (line) => log.push(line)),
    { env: WATCHER_ENV, ...options },
  );
  await waitFor(() => (running.ready() ? true : undefined), 8000, "informers synced");
  return { running, log };
}
