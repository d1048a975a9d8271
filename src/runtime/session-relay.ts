/**
 * SessionRelay: runs a session operation on the daemon that serves the session when several
 * daemons share one database (D489). The receiving daemon runs it itself when it holds the
 * session's lease or can take it; otherwise it commits a command (so what the caller sent is
 * durable before anything else happens), the holder is woken by the announcement, runs it on its
 * live actor and commits the answer, and the receiver answers its caller with it. A holder that
 * died leaves its command waiting: the receiver (or the takeover sweep of any daemon) takes the
 * session once its lease lapsed and runs what waits, in order. Owns the takeover sweep and the
 * cluster's announcements.
 */
import { SparError } from "../core/errors.ts";
import { uuidv7 } from "../core/ids.ts";
import type { PendingCommand, SessionCluster } from "../core/session-cluster.ts";
import { type SessionKey, sessionKeyString } from "../core/session-key.ts";
import { SESSION_OPS, type SessionOp, type SessionOps, isSessionOp } from "./session-ops.ts";
import type { Logger, SessionHost } from "./session-host.ts";

/** How long a receiver waits for the holder's answer before telling its caller the command waits. */
const ANSWER_WAIT_MS = 30_000;
/** Commands answered here that are remembered (a stale pending list may still name them). */
const DONE_KEPT = 4_096;

/** How often a waiting receiver looks at the command row and the lease (announcements may be missed). */
const RECHECK_MS = 1_000;

type Answer = { ok: true; value: unknown } | { ok: false; error: { code: string; message: string; details: unknown } };

export class SessionRelay {
  readonly #host: SessionHost;
  readonly #cluster: SessionCluster;
  readonly #logger: Logger;
  /** Per session: the drain of its commands in progress (one at a time, in order). */
  readonly #draining = new Map<string, Promise<void>>();
  /** Receivers waiting for a command's answer, by command id. */
  readonly #waiters = new Map<number, () => void>();
  /** Commands being run here now (a drain started them; they may outlast it). */
  readonly #running = new Set<number>();
  /** Commands run here lately (a drain that read them as pending before their answer landed skips them). */
  readonly #done = new Set<number>();
  /**
   * Commands answered lately, with the answer when their announcement carried it (D494): a
   * receiver whose command was answered before it began to wait finds it here.
   */
  readonly #recent = new Map<number, string | null>();
  #sweeps = 0;
  /** A daemon layer's own operations (svc's), run on the daemon serving the named session (D493). */
  readonly #daemonOps = new Map<string, (args: unknown) => Promise<unknown>>();
  #stopListening: (() => Promise<void>) | undefined;
  #sweep: ReturnType<typeof setInterval> | undefined;
  /** Sweeps failed in a row (logged at the first and when one works again). */
  #sweepsFailed = 0;

  constructor(host: SessionHost, cluster: SessionCluster, logger: Logger) {
    this.#host = host;
    this.#cluster = cluster;
    this.#logger = logger;
  }

  /** Listen to the cluster's announcements and sweep for lapsed leases every `sweepMs`. */
  async start(sweepMs: number): Promise<void> {
    this.#stopListening = await this.#cluster.listen({
      rows: (key, head) => this.#host.followers?.advance(key, head),
      command: (key, inline) => {
        if (this.#host.holds(key)) void this.drain(key, inline === undefined ? undefined : [inline]);
      },
      result: (id, inline) => {
        this.#noteResult(id, inline);
        this.#waiters.get(id)?.();
      },
      connected: () => {
        void this.#host.followers?.catchUp();
        for (const wake of this.#waiters.values()) wake();
      },
    });
    this.#sweep = setInterval(() => void this.sweep(), sweepMs);
    this.#sweep.unref?.();
  }

  async stop(): Promise<void> {
    clearInterval(this.#sweep);
    for (const wake of this.#waiters.values()) wake();
    await this.#stopListening?.();
  }

  /**
   * Take over sessions whose holder died and run the commands that waited for it. A failing
   * sweep (the database down) is logged once until one works again (D534).
   */
  async sweep(): Promise<void> {
    try {
      for (const key of await this.#host.takeOverLapsed()) await this.drain(key);
      // About once a minute at the 2 s sweep: answers older than an hour go.
      if (++this.#sweeps % 30 === 0) await this.#cluster.pruneAnswered();
      if (this.#sweepsFailed > 0)
        this.#logger.info(`takeover sweep: works again after ${this.#sweepsFailed} failed sweep(s)`);
      this.#sweepsFailed = 0;
    } catch (error) {
      if (this.#sweepsFailed++ === 0)
        this.#logger.warn(`takeover sweep: ${String(error)} (logged once until a sweep works again)`);
    }
  }

  /** A daemon layer's operation the relay may carry: `run` is called on the daemon serving the session. */
  registerOp(name: string, run: (args: unknown) => Promise<unknown>): void {
    if (isSessionOp(name)) throw new Error(`relayed operation ${name} is the runtime's own`);
    this.#daemonOps.set(name, run);
  }

  /**
   * Run a registered operation where `key` is served: here when this daemon holds it, can take it,
   * or the session does not exist yet (the operation creates it); else on its holder, waiting up
   * to `waitMs` for the answer.
   */
  async runOp(key: SessionKey, name: string, args: unknown, waitMs = ANSWER_WAIT_MS): Promise<unknown> {
    const run = this.#daemonOps.get(name);
    if (run === undefined) throw new Error(`relayed operation ${name} is not registered`);
    const held = this.#host.holds(key);
    let local: boolean;
    try {
      local = (await this.#host.tryActor(key)) !== undefined;
    } catch (error) {
      if (!(error instanceof SparError && error.code === "not_found")) throw error;
      local = true;
    }
    // Commands committed for an earlier holder run first (D530).
    if (local && !held) await this.drain(key);
    if (local) return await run(args);
    const id = await this.#cluster.postCommand(key, name, JSON.stringify(args ?? null));
    return await this.#answer(key, id, waitMs);
  }

  /** Run `op` where the session is served: here when this daemon holds it or can take it, else on its holder. */
  async run<K extends SessionOp>(
    key: SessionKey,
    op: K,
    args: SessionOps[K]["args"],
  ): Promise<SessionOps[K]["result"]> {
    const held = this.#host.holds(key);
    const actor = await this.#host.tryActor(key);
    if (actor !== undefined) {
      // Commands committed for an earlier holder run first, in order (D530): this daemon has just
      // taken the session, and nobody else will run them now. One it held already ran them.
      if (!held) await this.drain(key);
      return await SESSION_OPS[op](actor, args);
    }
    // A retried command must not queue its message twice (a holder that died after running it).
    const relayed =
      op === "inject" && !("idempotencyKey" in args) ? { ...args, idempotencyKey: `relay-${uuidv7()}` } : args;
    const id = await this.#cluster.postCommand(key, op, JSON.stringify(relayed));
    return (await this.#answer(key, id)) as SessionOps[K]["result"];
  }

  /**
   * Run the session's waiting commands on its live actor, oldest first (this daemon holds it):
   * `announced`, the ones an announcement carried, else those the store holds.
   */
  drain(key: SessionKey, announced?: PendingCommand[]): Promise<void> {
    const name = sessionKeyString(key);
    const next = (this.#draining.get(name) ?? Promise.resolve()).then(() => this.#drainNow(key, announced));
    const settled = next.catch((error: unknown) =>
      this.#logger.warn(`session ${name}: relayed commands: ${String(error)}`),
    );
    this.#draining.set(name, settled);
    void settled.then(() => {
      if (this.#draining.get(name) === settled) this.#draining.delete(name);
    });
    return settled;
  }

  /**
   * Start the session's waiting commands on this daemon, oldest first. Each is started once, in
   * order, and answered when it ends: a long one (svc's inject waits for its turn) holds back none
   * started after it (an abort must not wait behind it).
   */
  async #drainNow(key: SessionKey, announced?: PendingCommand[]): Promise<void> {
    // A stopping daemon would answer them "shutting down": they wait for the next holder, which
    // takes the session once this one lets its lease go at the end of the stop (D530).
    if (this.#host.shuttingDown || !this.#host.holds(key)) return;
    const actor = await this.#host.tryActor(key);
    if (actor === undefined) return;
    for (const command of announced ?? (await this.#cluster.pendingCommands(key))) {
      if (this.#host.shuttingDown || !this.#host.holds(key)) return;
      if (this.#running.has(command.id) || this.#done.has(command.id)) continue;
      this.#running.add(command.id);
      const started = this.#execute(actor, command.op, command.args);
      void started
        .then((answer) => this.#cluster.completeCommand(command.id, JSON.stringify(answer)))
        .then(() => this.#remember(command.id))
        .catch((error: unknown) => this.#logger.warn(`relayed command ${command.id}: ${String(error)}`))
        .finally(() => this.#running.delete(command.id));
      // The runtime's own operations take effect in order (a message queued before the next).
      if (isSessionOp(command.op)) await started;
    }
  }

  /** A command answered here: kept a while, so a drain that read it as pending does not run it again. */
  #remember(id: number): void {
    this.#done.add(id);
    if (this.#done.size > DONE_KEPT) {
      const oldest = this.#done.values().next().value;
      if (oldest !== undefined) this.#done.delete(oldest);
    }
  }

  async #execute(actor: unknown, op: string, args: string): Promise<Answer> {
    try {
      const parsed = JSON.parse(args) as unknown;
      if (isSessionOp(op)) {
        const run = SESSION_OPS[op] as (actor: unknown, args: unknown) => Promise<unknown>;
        return { ok: true, value: await run(actor, parsed) };
      }
      const run = this.#daemonOps.get(op);
      if (run === undefined) throw new SparError("bad_request", `unknown relayed operation ${op}`);
      return { ok: true, value: await run(parsed) };
    } catch (error) {
      return { ok: false, error: encodeError(error) };
    }
  }

  /** Wait for the command's answer; take the session over when its holder's lease lapses meanwhile. */
  async #answer(key: SessionKey, id: number, waitMs = ANSWER_WAIT_MS): Promise<unknown> {
    const deadline = performance.now() + waitMs;
    for (;;) {
      // The answer is announced (with it, when it fits); the row is read only when it is not.
      if (!this.#recent.has(id)) await this.#announced(id, RECHECK_MS);
      const announced = this.#recent.get(id);
      const text = typeof announced === "string" ? announced : await this.#cluster.commandResult(id);
      if (text !== undefined) {
        this.#recent.delete(id);
        return decodeAnswer(text);
      }
      // A stopping daemon takes no session over (it would only leave the command waiting).
      if (!this.#host.shuttingDown && (await this.#host.tryActor(key))) await this.drain(key);
      else if (performance.now() >= deadline)
        throw new SparError(
          "unavailable",
          `session ${sessionKeyString(key)}: the request is committed (command ${id}) but the daemon serving the session has not answered in ${Math.round(waitMs / 1000)} s; it runs when that daemon, or the one taking the session over, gets to it`,
        );
    }
  }

  #noteResult(id: number, inline: string | undefined): void {
    this.#recent.set(id, inline ?? null);
    if (this.#recent.size > DONE_KEPT) {
      const oldest = this.#recent.keys().next().value;
      if (oldest !== undefined) this.#recent.delete(oldest);
    }
  }

  /** Resolves when the command's answer is announced, or after `ms` (announcements can be missed). */
  #announced(id: number, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const waiters = this.#waiters;
      function done(): void {
        clearTimeout(timer);
        waiters.delete(id);
        resolve();
      }
      waiters.set(id, done);
    });
  }
}

function encodeError(error: unknown): { code: string; message: string; details: unknown } {
  if (error instanceof SparError) return { code: error.code, message: error.message, details: error.details };
  return { code: "internal", message: error instanceof Error ? error.message : String(error), details: {} };
}

function decodeAnswer(text: string): unknown {
  const answer = JSON.parse(text) as Answer;
  if (answer.ok) return answer.value;
  const { code, message, details } = answer.error;
  throw new SparError(code as SparError["code"], message, (details ?? {}) as Record<string, unknown>);
}
