/**
 * The `token-burn` source's judgement (docs/watcher.md#token-burn): the agent daemon's active
 * sessions and their cumulative usage, one answer per poll, gathered by the runner
 * (sources/token-burn-source.ts) as `{sessions: [{app, sessionID, usage}]}` where `usage` is the
 * daemon's `GET /sessions/{app}/{sid}/usage` body (or absent when that call failed). A session's
 * burn is its input + output + thoughts tokens per minute over the last 15 minutes of samples.
 * `token.burn` reason `token_burn` (warning): the rate is at least `--burn-multiple` × the median
 * rate of the other sessions that burned in the window, on 2 polls in a row (D403). Reason
 * `token_budget` (critical): with `--token-budget-usd` above 0, the session's spend at its
 * window's spend rate reaches the budget within `--burn-eta`, or already has. Each fires once
 * while its condition holds and is forgotten when it ends (the rate falls back, the projection
 * moves past the horizon), so it pages again later; a session absent from an answer has ended and
 * is forgotten. The first answer only fills state (a rate needs two samples). Pure: the answer is
 * untrusted JSON, and anything malformed reads as absent.
 */
import { goDuration } from "../go-time.ts";
import type { OpenCondition } from "../open-conditions.ts";
import type { Signal } from "../signal.ts";
import type { Detector, SourceSpec } from "../source-spec.ts";
import { field, sourceSignal } from "./source-fields.ts";

export interface TokenBurnSettings {
  /** The rate window (15m: docs/watcher.md#token-burn). */
  windowMs: number;
  /** `--burn-multiple`: a session at this multiple of its peers' median rate burns (above 1). */
  multiple: number;
  /** Polls in a row over the multiple before the warning. */
  consecutive: number;
  /** `--token-budget-usd`; 0 disarms the budget trigger. */
  budgetUsd: number;
  /** `--burn-eta`: a budget projected exhausted within this is critical. */
  etaMs: number;
}

export const TOKEN_BURN_DEFAULTS: TokenBurnSettings = {
  windowMs: 15 * 60_000,
  multiple: 4,
  consecutive: 2,
  budgetUsd: 0,
  etaMs: 30 * 60_000,
};

/** The poll name the runner reports under. */
export const TOKEN_BURN_POLL = "usage";

interface Sample {
  at: number;
  tokens: number;
  costUsd: number;
}

interface SessionState {
  app: string;
  id: string;
  samples: Sample[];
  /** Polls in a row over the multiple. */
  over: number;
  rateFired: boolean;
  budgetFired: boolean;
}

/** One session of an answer: its usage reading, or undefined when it could not be read this poll. */
interface Reading {
  app: string;
  id: string;
  sample: Omit<Sample, "at"> | undefined;
}

function finite(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** A usage body's cumulative tokens (input + output + thoughts) and cost; undefined when unreadable. */
export function usageReading(usage: unknown): Omit<Sample, "at"> | undefined {
  const input = finite(field(usage, "overall", "input_tokens"));
  const output = finite(field(usage, "overall", "output_tokens"));
  if (input === undefined || output === undefined) return undefined;
  const thoughts = finite(field(usage, "overall", "thoughts_tokens")) ?? 0;
  return { tokens: input + output + thoughts, costUsd: finite(field(usage, "overall", "cost_usd")) ?? 0 };
}

/** The sessions of an answer; undefined when the answer has no session list at all. */
export function readings(body: unknown): Reading[] | undefined {
  const sessions = field(body, "sessions");
  if (!Array.isArray(sessions)) return undefined;
  return sessions.flatMap((session): Reading[] => {
    const app = field(session, "app");
    const id = field(session, "sessionID");
    if (typeof app !== "string" || typeof id !== "string" || id === "") return [];
    return [{ app, id, sample: usageReading(field(session, "usage")) }];
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

/** Per-ms growth of a sample field over the retained window; undefined below two samples. */
function slope(samples: readonly Sample[], pick: (sample: Sample) => number): number | undefined {
  const first = samples[0];
  const last = samples[samples.length - 1];
  if (!first || !last || last.at <= first.at) return undefined;
  return (pick(last) - pick(first)) / (last.at - first.at);
}

const perMinute = (perMs: number) => Math.round(perMs * 60_000);
const usd = (value: number) => `$${value.toFixed(2)}`;

export class TokenBurnDetector implements Detector {
  readonly #settings: TokenBurnSettings;
  readonly #sessions = new Map<string, SessionState>();

  constructor(settings: TokenBurnSettings) {
    this.#settings = settings;
  }

  /** Sessions tracked (ended ones are forgotten). */
  get size(): number {
    return this.#sessions.size;
  }

  /** Samples held over every session (bounded by the window: one base sample plus those inside it). */
  get samples(): number {
    let held = 0;
    for (const state of this.#sessions.values()) held += state.samples.length;
    return held;
  }

  observe(): Signal[] {
    return [];
  }

  /** Burns and budgets that paged and still hold: gone when the rate falls back, the projection moves out, or the session ends (D437). */
  *open(): Iterable<OpenCondition> {
    for (const [key, state] of this.#sessions) {
      if (state.rateFired) yield { uid: `session:${key}`, reason: "token_burn" };
      if (state.budgetFired) yield { uid: `session:${key}`, reason: "token_budget" };
    }
  }

  /** One poll's answer; a failed poll (`body` undefined) or one without a session list changes nothing. */
  polled(_poll: string, body: unknown, now: number, error?: string): Signal[] {
    if (error !== undefined) return [];
    const answer = readings(body);
    if (!answer) return [];
    const seen = new Set<string>();
    for (const reading of answer) {
      const key = `${reading.app}/${reading.id}`;
      seen.add(key);
      this.#record(key, reading, now);
    }
    for (const key of this.#sessions.keys()) if (!seen.has(key)) this.#sessions.delete(key);
    return this.#judge(now);
  }

  #record(key: string, reading: Reading, now: number): void {
    const state = this.#sessions.get(key) ?? {
      app: reading.app,
      id: reading.id,
      samples: [],
      over: 0,
      rateFired: false,
      budgetFired: false,
    };
    this.#sessions.set(key, state);
    if (!reading.sample) return;
    const last = state.samples[state.samples.length - 1];
    // A counter that went back is a new ledger under the same id: its window starts over.
    if (last && reading.sample.tokens < last.tokens) state.samples = [];
    state.samples.push({ at: now, ...reading.sample });
    // The window keeps one sample at or before its start as the base, so sparse polls still judge.
    const from = now - this.#settings.windowMs;
    while (state.samples.length > 2 && (state.samples[1]?.at ?? now) <= from) state.samples.shift();
  }

  #judge(now: number): Signal[] {
    const rates = new Map<string, number>();
    for (const [key, state] of this.#sessions) {
      const rate = slope(state.samples, (sample) => sample.tokens);
      if (rate !== undefined) rates.set(key, rate);
    }
    const signals: Signal[] = [];
    for (const [key, state] of this.#sessions) {
      const rate = this.#judgeRate(key, state, rates, now);
      if (rate) signals.push(rate);
      const budget = this.#judgeBudget(state, now);
      if (budget) signals.push(budget);
    }
    return signals;
  }

  /** D403: against the median of the other sessions that burned in the window, on 2 polls in a row. */
  #judgeRate(key: string, state: SessionState, rates: ReadonlyMap<string, number>, now: number): Signal | undefined {
    const rate = rates.get(key);
    const peers = [...rates].filter(([other, value]) => other !== key && value > 0).map(([, value]) => value);
    const typical = peers.length > 0 ? median(peers) : undefined;
    // At the multiple counts (a relative epsilon keeps float division from deciding an exact 4×).
    if (rate === undefined || typical === undefined || rate < this.#settings.multiple * typical * (1 - 1e-9)) {
      state.over = 0;
      state.rateFired = false;
      return undefined;
    }
    state.over += 1;
    if (state.rateFired || state.over < this.#settings.consecutive) return undefined;
    state.rateFired = true;
    const span = now - (state.samples[0]?.at ?? now);
    return this.#signal(
      state,
      "token_burn",
      "warning",
      now,
      `burns ${perMinute(rate)} tokens/min over the last ${goDuration(span)}, ${(rate / typical).toFixed(1)}× the median of ${peers.length} other session${peers.length === 1 ? "" : "s"} (${perMinute(typical)} tokens/min), on ${state.over} polls in a row`,
    );
  }

  #judgeBudget(state: SessionState, now: number): Signal | undefined {
    const { budgetUsd, etaMs } = this.#settings;
    const spendRate = slope(state.samples, (sample) => sample.costUsd);
    const spent = state.samples[state.samples.length - 1]?.costUsd;
    if (budgetUsd <= 0 || spendRate === undefined || spent === undefined) return undefined;
    const left = budgetUsd - spent;
    const eta = left <= 0 ? 0 : spendRate > 0 ? left / spendRate : Number.POSITIVE_INFINITY;
    if (eta > etaMs) {
      state.budgetFired = false;
      return undefined;
    }
    if (state.budgetFired) return undefined;
    state.budgetFired = true;
    const what =
      left <= 0
        ? `has spent ${usd(spent)}, over its ${usd(budgetUsd)} budget`
        : `has spent ${usd(spent)} of its ${usd(budgetUsd)} budget; at ${usd(spendRate * 60_000)}/min it runs out in ${goDuration(Math.round(eta / 1000) * 1000)} (--burn-eta ${goDuration(etaMs)})`;
    return this.#signal(state, "token_budget", "critical", now, what);
  }

  #signal(state: SessionState, reason: string, severity: "warning" | "critical", now: number, what: string): Signal {
    const name = `${state.app}/${state.id}`;
    return sourceSignal({
      kind: "token.burn",
      reason,
      object: { uid: `session:${name}`, name, namespace: "" },
      kindOfObject: "Session",
      severity,
      now,
      message: `agent session ${name} ${what}`,
    });
  }
}

/**
 * The source's data (D375): namespace-scoped, no Kubernetes grants, no watches or polls of the
 * API server: its runner polls the agent daemon (SOURCE_RUNNERS), never constructed under `auto`.
 */
export const TOKEN_BURN_SPEC: SourceSpec<TokenBurnSettings> = {
  name: "token-burn",
  reasons: ["token_burn", "token_budget"],
  scope: "namespace",
  required: [],
  watches: [],
  detector: (settings) => new TokenBurnDetector(settings),
};
