/**
 * The `token-burn` source's runner (docs/watcher.md#token-burn): every `--token-poll` it asks the
 * agent daemon (`--token-endpoint`, else `--daemon-url`) for `GET /sessions`, then
 * `GET /sessions/{app}/{sid}/usage` for each `active` one, and hands the gathered answer to the
 * pure detector (core/sources/token-burn-detector.ts). It calls as the daemon sink does (D404):
 * `Authorization: Bearer` from the variable `--token-env` names, `X-Asserted-Caller` from
 * `--owner`; an operator-set URL, fetched like the sinks' (no outbound guard, which is for URLs a
 * model or a remote caller supplies). A failed poll is logged once until one answers again (a
 * 401 or 403 explained), never thrown; a usage call that fails leaves that session unjudged this
 * poll, a 404 means it ended. Built from the flag values and the context alone (it may run in a
 * source worker). `synced` once a poll has answered (D404).
 */
import { goDuration } from "../core/go-time.ts";
import { OpenConditionDiff } from "../core/open-conditions.ts";
import { TOKEN_BURN_POLL, TOKEN_BURN_SPEC, type TokenBurnSettings } from "../core/sources/token-burn-detector.ts";
import type { Detector } from "../core/source-spec.ts";
import { tracedFetch } from "../../telemetry/client-spans.ts";
import type { FlagValue } from "../../config/flag-spec.ts";
import type { SourceRunner, SourceRunnerContext, SourceRunnerFactory } from "./source-runner.ts";

/** One request's deadline. */
const REQUEST_TIMEOUT_MS = 10_000;
/** The largest answer read (a usage body lists every turn). */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
/** Usage requests in flight at once. */
const USAGE_CONCURRENCY = 4;

export interface TokenBurnRunnerSettings {
  /** Base URL without a trailing slash; undefined: nothing to poll (D405). */
  baseUrl: string | undefined;
  pollMs: number;
  /** The variable named by `--token-env` (for the log), and its value. */
  tokenEnv: string | undefined;
  token: string | undefined;
  owner: string | undefined;
  detector: TokenBurnSettings;
}

class PollError extends Error {}

class HttpError extends PollError {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** Why the daemon refused, for the operator. */
function explain(status: number, settings: TokenBurnRunnerSettings): string {
  const variable = settings.tokenEnv ? `the token in ${settings.tokenEnv}` : "no token (--token-env is not set)";
  if (status === 401)
    return `the daemon does not accept ${variable}: check --token-env names a token of the daemon's caller table`;
  if (status === 403)
    return `the daemon refused the watcher's identity${settings.owner ? ` asserting ${settings.owner}` : ""}: a proxy identity may assert --owner (attach.multi_session.auth.proxy_identities)`;
  return "";
}

async function readCapped(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (reader === undefined) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return Buffer.concat(chunks).toString("utf8");
      size += value.byteLength;
      if (size > MAX_ANSWER_BYTES) throw new PollError(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`);
      chunks.push(value);
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

export class TokenBurnSource implements SourceRunner {
  readonly name = TOKEN_BURN_SPEC.name;
  readonly #settings: TokenBurnRunnerSettings;
  readonly #context: SourceRunnerContext;
  readonly #detector: Detector;
  readonly #now: () => number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #inFlight: Promise<void> | undefined;
  #stopped = false;
  /** Aborts the requests in flight at stop, so a daemon that does not answer never holds a shutdown. */
  readonly #stopping = new AbortController();
  #answered = false;
  #failing: string | undefined;
  readonly #openDiff = new OpenConditionDiff();

  constructor(settings: TokenBurnRunnerSettings, context: SourceRunnerContext) {
    this.#settings = settings;
    this.#context = context;
    this.#now = context.now ?? Date.now;
    this.#detector = TOKEN_BURN_SPEC.detector(settings.detector);
  }

  /** A poll has answered (nothing to poll counts as answered: it was said at start). */
  get synced(): boolean {
    return this.#answered || this.#settings.baseUrl === undefined;
  }

  get lastError(): string | undefined {
    return this.#failing;
  }

  async start(): Promise<void> {
    const { baseUrl, pollMs, tokenEnv, token } = this.#settings;
    const { logger } = this.#context;
    if (baseUrl === undefined) {
      logger.warn(
        "source token-burn: no --token-endpoint or --daemon-url: it polls nothing and will emit nothing (D405)",
      );
      return;
    }
    if (!token)
      logger.warn(
        `source token-burn: ${tokenEnv ? `the variable ${tokenEnv} (--token-env) is not set` : "--token-env is not set"}: polling ${baseUrl} without a bearer token`,
      );
    logger.info(`source token-burn: polling ${baseUrl}/sessions every ${goDuration(pollMs)}`);
    void this.poll();
    this.#timer = setInterval(() => void this.poll(), pollMs);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#stopping.abort();
    await this.#inFlight;
  }

  /** One poll now (the timer's turn; tests call it to step a clock); a poll still running is joined. */
  poll(): Promise<void> {
    this.#inFlight ??= this.#pollOnce().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  async #pollOnce(): Promise<void> {
    let body: unknown;
    let error: string | undefined;
    try {
      body = await this.#gather();
    } catch (caught) {
      error = caught instanceof Error ? caught.message : String(caught);
    }
    if (this.#stopped) return;
    this.#note(error);
    const now = this.#now();
    for (const signal of this.#detector.polled?.(TOKEN_BURN_POLL, body, now, error) ?? []) this.#context.emit(signal);
    // What still burns, diffed after each answer, for recovery (D437).
    const { clearance } = this.#context;
    if (clearance && this.#detector.open)
      for (const report of this.#openDiff.diff(this.#detector.open(), now)) clearance(report);
  }

  /** A failure logged once until a poll answers again. */
  #note(error: string | undefined): void {
    const { logger } = this.#context;
    if (error === undefined) {
      this.#answered = true;
      if (this.#failing !== undefined) logger.info("source token-burn: the daemon answers again");
      this.#failing = undefined;
      return;
    }
    if (this.#failing === undefined)
      logger.warn(`source token-burn: poll failed: ${error} (retried every ${goDuration(this.#settings.pollMs)})`);
    this.#failing = error;
  }

  /** `{sessions: [{app, sessionID, usage?}]}` of the active sessions; throws when the list fails. */
  async #gather(): Promise<unknown> {
    const listed = await this.#get("/sessions");
    const sessions =
      listed !== null && typeof listed === "object" ? (listed as { sessions?: unknown }).sessions : undefined;
    if (!Array.isArray(sessions)) throw new PollError("GET /sessions: the answer has no sessions list");
    const active = sessions.filter(
      (session): session is { app: string; sessionID: string } =>
        typeof session?.app === "string" && typeof session?.sessionID === "string" && session?.status === "active",
    );
    const gathered: Array<{ app: string; sessionID: string; usage?: unknown }> = [];
    for (let at = 0; at < active.length; at += USAGE_CONCURRENCY)
      gathered.push(
        ...(await Promise.all(active.slice(at, at + USAGE_CONCURRENCY).map((session) => this.#usage(session)))).flat(),
      );
    return { sessions: gathered };
  }

  /** One session's usage: [] when it ended (404), no `usage` when the call failed otherwise. */
  async #usage(session: {
    app: string;
    sessionID: string;
  }): Promise<Array<{ app: string; sessionID: string; usage?: unknown }>> {
    const path = `/sessions/${encodeURIComponent(session.app)}/${encodeURIComponent(session.sessionID)}/usage`;
    try {
      return [{ app: session.app, sessionID: session.sessionID, usage: await this.#get(path) }];
    } catch (caught) {
      if (caught instanceof HttpError && caught.status === 404) return [];
      return [{ app: session.app, sessionID: session.sessionID }];
    }
  }

  async #get(path: string): Promise<unknown> {
    const { baseUrl, token, owner } = this.#settings;
    const headers: Record<string, string> = { accept: "application/json" };
    if (token) headers.authorization = `Bearer ${token}`;
    if (owner) headers["x-asserted-caller"] = owner;
    const response = await tracedFetch(`${baseUrl}${path}`, {
      headers,
      signal: AbortSignal.any([AbortSignal.timeout(REQUEST_TIMEOUT_MS), this.#stopping.signal]),
    });
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      const why = explain(response.status, this.#settings);
      throw new HttpError(response.status, `GET ${path}: HTTP ${response.status}${why ? ` (${why})` : ""}`);
    }
    try {
      return JSON.parse(await readCapped(response));
    } catch (caught) {
      if (caught instanceof PollError) throw new PollError(`GET ${path}: ${caught.message}`);
      throw new PollError(`GET ${path}: the answer is not JSON`);
    }
  }
}

function text(values: ReadonlyMap<string, FlagValue>, name: string): string | undefined {
  const value = values.get(name);
  return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
}

/** The runner's settings from the flag values and the environment alone. */
export function tokenBurnRunnerSettings(
  values: ReadonlyMap<string, FlagValue>,
  env: Readonly<Record<string, string | undefined>>,
  detector: TokenBurnSettings,
): TokenBurnRunnerSettings {
  const tokenEnv = text(values, "token-env");
  const poll = values.get("token-poll");
  return {
    baseUrl: text(values, "token-endpoint") ?? text(values, "daemon-url"),
    pollMs: typeof poll === "number" ? poll : 60_000,
    tokenEnv,
    token: tokenEnv ? env[tokenEnv] || undefined : undefined,
    owner: text(values, "owner"),
    detector,
  };
}

/** SOURCE_RUNNERS' factory: the detector's thresholds from `settings` (source-registry.ts reads them). */
export function tokenBurnRunner(
  settings: (values: ReadonlyMap<string, FlagValue>) => TokenBurnSettings,
): SourceRunnerFactory {
  return (context) =>
    new TokenBurnSource(tokenBurnRunnerSettings(context.values, context.env, settings(context.values)), context);
}
