/**
 * The PostgreSQL column of bench/turns.ts (D514): `spar agent --multi-session
 * --session-db-driver=postgres` on a throwaway server over its Unix socket (pg-cluster.ts), the
 * same closed and paced loops as the sqlite column. With `--daemons=N` it starts N agents on the
 * one database: session i is created on, and streamed from, daemon i mod N, and its injects go to
 * every daemon in turn (most injects are relayed to the session's daemon, D489). A daemon refused
 * at startup (an older spar holding D261's writer lock) is said so and the daemons that started
 * are measured. turns.ts passes its loop machinery in (as for --tracing).
 */
import { join } from "node:path";
import { BUN, fmt, spawnServer, table, type Server } from "./lib.ts";
import { type BenchPostgres, startBenchPostgres } from "./pg-cluster.ts";

/** What turns.ts's loops need of a session: where to inject, and its stream. */
export interface LoopSession<S> {
  readonly url: string;
  readonly stream: S;
}

/** The numbers of one loop phase that the column prints (turns.ts's LoopResult has them). */
export interface TurnNumbers {
  label: string;
  turns: number;
  turnsPerSec: number;
  p50: number;
  p99: number;
  max: number;
  injectP50: number;
  injectP99: number;
  cpuPct: number;
  turnsPerCpuSec: number;
  failures: Record<string, number>;
}

export interface PgTurnDeps<S extends { close(): void }, R extends TurnNumbers> {
  setup(server: Server, count: number, prefix: string): Promise<Array<LoopSession<S>>>;
  run(
    label: string,
    server: Server,
    sessions: Array<LoopSession<S>>,
    seconds: number,
    record?: boolean,
    totalRate?: number,
  ): Promise<R>;
}

export interface PgTurnOptions {
  count: number;
  seconds: number;
  pacedSeconds: number;
  rate: number;
  daemons: number;
  /** Extra flags for every agent on postgres (e.g. one the several-daemon mode needs). */
  agentFlags: string[];
  /** Print the server's top statements over the closed loop, per turn (pg_stat_statements). */
  statements: boolean;
}

/** A result of the column, with the PostgreSQL server's CPU over the same window. */
export type PgTurnResult<R> = R & { pgCpuPct: number; daemons: number };

/** Injects rotate over the daemons (the getter is read once per inject); the stream stays on one. */
class RotatingSession<S> implements LoopSession<S> {
  #next = 0;
  constructor(
    private readonly urls: readonly string[],
    readonly stream: S,
  ) {}
  get url(): string {
    const url = this.urls[this.#next % this.urls.length] ?? "";
    this.#next++;
    return url;
  }
}

const REFUSED = /in use by another spar daemon|one daemon per database/;

/** Starts up to `count` agents on `url`; stops at the first refused by the writer lock, saying so. */
async function startAgents(url: string, count: number, flags: string[]): Promise<Server[]> {
  const agents: Server[] = [];
  for (let i = 0; i < count; i++) {
    const profile = process.env.SPAR_BENCH_PROFILE;
    const argv = [BUN, ...(profile ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${profile}/pg-${i}`] : [])];
    argv.push(join(import.meta.dir, "../src/main.ts"), "agent", "--attach-listen=127.0.0.1:0");
    argv.push("--session-db-driver=postgres", `--session-db=${url}`, "--multi-session", ...flags);
    try {
      agents.push(await spawnServer(`spar-pg-${i}`, argv));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (i === 0 || !REFUSED.test(message)) throw error;
      console.error(`postgres daemon ${i + 1} of ${count}: refused: one daemon per database (measuring ${i})`);
      break;
    }
  }
  return agents;
}

/** Sessions spread over the agents: created and streamed on agent i mod N, injects on every agent in turn. */
async function spreadSessions<S extends { close(): void }, R extends TurnNumbers>(
  deps: PgTurnDeps<S, R>,
  agents: Server[],
  count: number,
): Promise<Array<LoopSession<S>>> {
  const sessions: Array<LoopSession<S>> = [];
  for (let d = 0; d < agents.length; d++) {
    const agent = agents[d] as Server;
    const share = Math.floor(count / agents.length) + (d < count % agents.length ? 1 : 0);
    for (const session of await deps.setup(agent, share, `bench-d${d}-`)) {
      const path = new URL(session.url).pathname;
      const urls = agents.map((_, k) => `${(agents[(d + k) % agents.length] as Server).baseUrl}${path}`);
      sessions.push(agents.length === 1 ? session : new RotatingSession(urls, session.stream));
    }
  }
  return sessions;
}

/** The closed loop's statements by server time, per turn: where PostgreSQL's share of a turn goes. */
async function statementsTable(pg: BenchPostgres, turns: number): Promise<string> {
  const { commits, top } = await pg.statements("bench_turns", 12);
  const total = top.reduce((sum, row) => sum + row.calls, 0);
  return [
    `\nServer statements over the closed loop (${turns} turns, ${fmt(commits / turns)} COMMITs per turn):\n`,
    table(
      ["statement", "calls/turn", "server us/call", "server ms total"],
      top.map((row) => [
        row.query.replace(/\s+/g, " ").slice(0, 90).replace(/\|/g, "\\|"),
        fmt(row.calls / turns),
        fmt((row.totalMs * 1000) / row.calls),
        fmt(row.totalMs),
      ]),
    ),
    `(the top ${top.length}: ${fmt(total / turns)} statements per turn)`,
  ].join("\n");
}

/** The column's phases: warm-up, closed loop, paced; each result with the server's CPU beside. */
export async function pgTurnPhases<S extends { close(): void }, R extends TurnNumbers>(
  deps: PgTurnDeps<S, R>,
  options: PgTurnOptions,
): Promise<{ results: Array<PgTurnResult<R>>; about: string; statements: string }> {
  const pg = await startBenchPostgres({ statements: options.statements });
  const results: Array<PgTurnResult<R>> = [];
  let agents: Server[] = [];
  let statements = "";
  try {
    const about = await pg.describe();
    agents = await startAgents(await pg.createDatabase("bench_turns"), options.daemons, options.agentFlags);
    const first = agents[0] as Server;
    const sessions = await spreadSessions(deps, agents, options.count);
    const on = agents.length === 1 ? "spar on postgres" : `spar on postgres, ${agents.length} daemons`;
    const measured = async (label: string, seconds: number, rate?: number) => {
      const cpu0 = pg.cpuSeconds();
      const started = performance.now();
      const result = await deps.run(label, first, sessions, seconds, true, rate);
      const pgCpuPct = ((pg.cpuSeconds() - cpu0) / ((performance.now() - started) / 1000)) * 100;
      console.error(`  postgres server CPU ${fmt(pgCpuPct)}% over ${label}`);
      results.push({ ...result, pgCpuPct, daemons: agents.length });
    };
    await deps.run("warm-up", first, sessions, 2, false);
    if (options.statements) await pg.resetStatements();
    await measured(`${on}, ${options.count} sessions x 1 loop`, options.seconds);
    if (options.statements) statements = await statementsTable(pg, results.at(-1)?.turns ?? 0);
    await measured(
      `${on}, ${options.count} sessions, paced ${options.rate} turns/s`,
      options.pacedSeconds,
      options.rate,
    );
    for (const session of sessions) session.stream.close();
    return { results, about, statements };
  } finally {
    await Promise.all(agents.map((agent) => agent.stop()));
    await pg.stop();
  }
}

/** The column's table and its line against issue 34's targets (and against the sqlite column, when it ran). */
export function printPgTurns(
  results: readonly PgTurnResult<TurnNumbers>[],
  about: string,
  statements: string,
  sqlite?: TurnNumbers,
): void {
  console.log(`\nPostgreSQL column: the same loops against spar agent --session-db-driver=postgres; ${about}.`);
  console.log('("spar CPU%" is the first daemon\'s; "pg CPU%" all the server\'s processes, % of one core)\n');
  console.log(
    table(
      [
        "run",
        "turns",
        "turns/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "inject POST p50/p99 ms",
        "spar CPU%",
        "pg CPU%",
        "failures",
      ],
      results.map((result) => [
        result.label,
        String(result.turns),
        fmt(result.turnsPerSec),
        fmt(result.p50),
        fmt(result.p99),
        fmt(result.max),
        `${fmt(result.injectP50)} / ${fmt(result.injectP99)}`,
        fmt(result.cpuPct),
        fmt(result.pgCpuPct),
        Object.keys(result.failures).length ? JSON.stringify(result.failures) : "0",
      ]),
    ),
  );
  if (statements) console.log(statements);
  const closed = results.find((result) => result.label.endsWith("x 1 loop"));
  if (!closed) return;
  const versus = sqlite ? ` (${fmt(closed.turnsPerSec / sqlite.turnsPerSec, 2)}x sqlite's closed loop)` : "";
  console.log(
    `\nTargets (issue 34: >= 1,000 turns/s, p99 < 150 ms): closed loop on postgres ${fmt(closed.turnsPerSec)} turns/s${versus} at p99 ${fmt(closed.p99)} ms.`,
  );
}

/**
 * turns.ts's PostgreSQL column from its flags (`--daemons`, `--pg-agent-flags`, `--pg-statements`):
 * run, print, and compare with `sqliteResults`' closed loop when the sqlite column ran.
 */
export async function pgTurnColumn<S extends { close(): void }, R extends TurnNumbers & { sessions: number }>(
  deps: PgTurnDeps<S, R>,
  flags: ReadonlyMap<string, string>,
  loops: { count: number; seconds: number; pacedSeconds: number; rate: number },
  sqliteResults: readonly R[],
): Promise<void> {
  const daemons = Math.max(1, Math.floor(Number(flags.get("daemons") ?? 1)) || 1);
  const agentFlags = (flags.get("pg-agent-flags") ?? "").split(",").filter((flag) => flag !== "");
  try {
    const options = { ...loops, daemons, agentFlags, statements: flags.has("pg-statements") };
    const { results, about, statements } = await pgTurnPhases(deps, options);
    const sqliteClosed = sqliteResults.find(
      (result) => result.label.startsWith("spar, ") && result.label.endsWith("x 1 loop") && result.sessions > 1,
    );
    printPgTurns(results, about, statements, sqliteClosed);
  } catch (error) {
    console.error(`postgres phases FAILED: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
}
