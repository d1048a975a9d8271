/**
 * Usage and cost math: token counts per model call, prices per million tokens, the ledger a session
 * keeps, and the UsageInfo body of GET /usage (docs/attach-api.md#endpoints). Pure: no clocks, no
 * I/O.
 *
 * Invariant: cached + cache-write + uncached input tokens are disjoint and sum to input tokens.
 */
import { DigestTally } from "./digest-tally.ts";

export interface TokenUsage {
  /** All input tokens of the call: cached + cacheWrite + uncached. */
  inputTokens: number;
  cachedInputTokens: number;
  cacheWriteInputTokens: number;
  /** Output tokens excluding thoughts. */
  outputTokens: number;
  thoughtsTokens: number;
  /** Populated by some providers only; never priced. */
  toolUseTokens: number;
  /** The provider's own total-token convention. */
  totalTokens: number;
}

export interface ModelRates {
  inputUsdPerMTok: number;
  outputUsdPerMTok: number;
  /** Defaults to the input rate when unset. */
  cachedUsdPerMTok?: number;
  /** Defaults to the input rate when unset. */
  cacheWriteUsdPerMTok?: number;
}

export interface TurnCost {
  costUsd: number;
  costUsdUncachedReference: number;
}

export const ZERO_USAGE: TokenUsage = Object.freeze({
  inputTokens: 0,
  cachedInputTokens: 0,
  cacheWriteInputTokens: 0,
  outputTokens: 0,
  thoughtsTokens: 0,
  toolUseTokens: 0,
  totalTokens: 0,
});

export function uncachedInputTokens(usage: TokenUsage): number {
  return Math.max(0, usage.inputTokens - usage.cachedInputTokens - usage.cacheWriteInputTokens);
}

export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    cachedInputTokens: a.cachedInputTokens + b.cachedInputTokens,
    cacheWriteInputTokens: a.cacheWriteInputTokens + b.cacheWriteInputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    thoughtsTokens: a.thoughtsTokens + b.thoughtsTokens,
    toolUseTokens: a.toolUseTokens + b.toolUseTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
}

/** Estimated token count used by offline models: ceil(chars / 4). */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * Cost of one call. Thoughts bill as output. The uncached reference prices every input token
 * at the input rate (the same traffic with the cache off) and is never below the real cost.
 */
export function priceUsage(usage: TokenUsage, rates: ModelRates | undefined): TurnCost {
  if (!rates) return { costUsd: 0, costUsdUncachedReference: 0 };
  const perToken = (ratePerMTok: number) => ratePerMTok / 1_000_000;
  const input = perToken(rates.inputUsdPerMTok);
  const cached = perToken(rates.cachedUsdPerMTok ?? rates.inputUsdPerMTok);
  const cacheWrite = perToken(rates.cacheWriteUsdPerMTok ?? rates.inputUsdPerMTok);
  const output = perToken(rates.outputUsdPerMTok) * (usage.outputTokens + usage.thoughtsTokens);
  const costUsd =
    uncachedInputTokens(usage) * input +
    usage.cachedInputTokens * cached +
    usage.cacheWriteInputTokens * cacheWrite +
    output;
  const reference = usage.inputTokens * input + output;
  return { costUsd, costUsdUncachedReference: Math.max(reference, costUsd) };
}

/** One agent turn's usage: every model call of the turn summed. */
export interface TurnUsageRecord {
  /** 1-based, in submission order. */
  turn: number;
  /** RFC 3339 time of the turn's first model call. */
  ts: string;
  model: string;
  usage: TokenUsage;
  cost: TurnCost;
}

interface Totals {
  usage: TokenUsage;
  turns: number;
  costUsd: number;
  costUsdUncachedReference: number;
}

const emptyTotals = (): Totals => ({ usage: ZERO_USAGE, turns: 0, costUsd: 0, costUsdUncachedReference: 0 });

function addRecord(totals: Totals, record: TurnUsageRecord): Totals {
  return {
    usage: addUsage(totals.usage, record.usage),
    turns: totals.turns + 1,
    costUsd: totals.costUsd + record.cost.costUsd,
    costUsdUncachedReference: totals.costUsdUncachedReference + record.cost.costUsdUncachedReference,
  };
}

/** Per-turn records a ledger keeps in memory by default; older ones are rebuilt from the log on demand. */
export const RECENT_TURN_RECORDS = 100;

/**
 * A session's usage: cumulative totals, per model, and per turn. Only the most recent
 * `recentLimit` per-turn records stay in memory, so a session that turns for days stays flat;
 * `complete` says whether they are all of them (else the caller rebuilds the older ones).
 */
export class UsageLedger {
  #overall: Totals = emptyTotals();
  readonly #perModel = new Map<string, Totals>();
  readonly #recent: TurnUsageRecord[] = [];
  readonly #recentLimit: number;
  #turns = 0;
  /** Tool-result digests per strategy (D355): `digest_methods` here, `digest_savings` on /context. */
  readonly digests = new DigestTally();

  constructor(recentLimit = RECENT_TURN_RECORDS) {
    this.#recentLimit = Math.max(1, recentLimit);
  }

  record(record: TurnUsageRecord): void {
    this.#turns++;
    this.#recent.push(record);
    if (this.#recent.length > this.#recentLimit) this.#recent.shift();
    this.#overall = addRecord(this.#overall, record);
    this.#perModel.set(record.model, addRecord(this.#perModel.get(record.model) ?? emptyTotals(), record));
  }

  /** A model call outside any turn (a compaction summary): counted in the totals, not in per_turn. */
  recordExtra(model: string, usage: TokenUsage, cost: TurnCost): void {
    const extra = { turn: 0, ts: "", model, usage, cost };
    const add = (totals: Totals): Totals => ({ ...addRecord(totals, extra), turns: totals.turns });
    this.#overall = add(this.#overall);
    this.#perModel.set(model, add(this.#perModel.get(model) ?? emptyTotals()));
  }

  get turns(): number {
    return this.#turns;
  }

  /** True while every per-turn record is still in memory. */
  get complete(): boolean {
    return this.#recent.length === this.#turns;
  }

  /** The per-turn records in memory, oldest first (the last `recentLimit` turns). */
  get recentTurns(): readonly TurnUsageRecord[] {
    return this.#recent;
  }

  get sessionCostUsd(): number {
    return this.#overall.costUsd;
  }

  lastTurn(): TurnUsageRecord | undefined {
    return this.#recent[this.#recent.length - 1];
  }

  /**
   * The UsageInfo body of GET /usage. Secondary fields are omitted when zero. `older` are
   * the per-turn records no longer in memory (turns 1..turns - recentTurns.length), when the
   * caller rebuilt them.
   */
  toUsageInfo(older: readonly TurnUsageRecord[] = []): UsageInfo {
    const perModel: Record<string, UsageTotalsBody> = {};
    for (const [model, totals] of this.#perModel) perModel[model] = totalsBody(totals);
    const info: UsageInfo = { overall: totalsBody(this.#overall) };
    if (this.#perModel.size > 0) info.per_model = perModel;
    const perTurn = [...older, ...this.#recent];
    if (perTurn.length > 0) info.per_turn = perTurn.map(turnBody);
    const digests = this.digests.methodsBody();
    if (digests !== undefined) info.digest_methods = digests;
    return info;
  }

  /** The cumulative usage a `usage-update` frame carries: totals, per model (in first-use order), the last turn. */
  toUsageUpdate(): UsageUpdate {
    const byModel = new Map<string, UsageTally>();
    for (const [model, totals] of this.#perModel) byModel.set(model, tally(totals));
    const update: UsageUpdate = { total: tally(this.#overall), byModel };
    const last = this.lastTurn();
    if (last) {
      update.lastTurn = {
        model: last.model,
        inputTokens: last.usage.inputTokens,
        cachedInputTokens: last.usage.cachedInputTokens,
        cacheWriteInputTokens: last.usage.cacheWriteInputTokens,
        outputTokens: last.usage.outputTokens,
        costUsd: last.cost.costUsd,
      };
    }
    return update;
  }
}

export interface UsageTotalsBody {
  input_tokens: number;
  input_tokens_cached?: number;
  input_tokens_cache_write?: number;
  input_tokens_uncached?: number;
  output_tokens: number;
  thoughts_tokens?: number;
  turns: number;
  cost_usd: number;
  cost_usd_uncached_reference?: number;
}

export interface UsageTurnBody {
  turn: number;
  ts: string;
  model: string;
  input_tokens: number;
  input_tokens_cached?: number;
  input_tokens_cache_write?: number;
  input_tokens_uncached?: number;
  output_tokens: number;
  thoughts_tokens?: number;
  tool_use_tokens?: number;
  total_tokens: number;
  cost_usd: number;
  cost_usd_uncached_reference?: number;
}

export interface UsageInfo {
  overall: UsageTotalsBody;
  per_model?: Record<string, UsageTotalsBody>;
  per_turn?: UsageTurnBody[];
  digest_methods?: { counts?: Record<string, number>; bytes_saved?: Record<string, number> };
}

/** Cumulative tokens, cost and turns: of the whole session or of one model. */
export interface UsageTally {
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  turns: number;
}

/** The last turn's usage as a usage update reports it. */
export interface LastTurnUsage {
  model: string;
  inputTokens: number;
  cachedInputTokens: number;
  cacheWriteInputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/** A session's cumulative usage (the `usage-update` live frame's content). */
export interface UsageUpdate {
  total: UsageTally;
  /** Per model, in the order each model was first used; empty before any turn. */
  byModel: ReadonlyMap<string, UsageTally>;
  /** Absent before the first turn. */
  lastTurn?: LastTurnUsage;
}

function tally(totals: Totals): UsageTally {
  return {
    inputTokens: totals.usage.inputTokens,
    outputTokens: totals.usage.outputTokens,
    costUsd: totals.costUsd,
    turns: totals.turns,
  };
}

function inputBreakdown(usage: TokenUsage) {
  const body: { input_tokens_cached?: number; input_tokens_cache_write?: number; input_tokens_uncached?: number } = {};
  const uncached = uncachedInputTokens(usage);
  if (usage.cachedInputTokens > 0) body.input_tokens_cached = usage.cachedInputTokens;
  if (usage.cacheWriteInputTokens > 0) body.input_tokens_cache_write = usage.cacheWriteInputTokens;
  if (uncached > 0) body.input_tokens_uncached = uncached;
  return body;
}

function totalsBody(totals: Totals): UsageTotalsBody {
  const body: UsageTotalsBody = {
    input_tokens: totals.usage.inputTokens,
    ...inputBreakdown(totals.usage),
    output_tokens: totals.usage.outputTokens,
    turns: totals.turns,
    cost_usd: totals.costUsd,
  };
  if (totals.usage.thoughtsTokens > 0) body.thoughts_tokens = totals.usage.thoughtsTokens;
  if (totals.costUsdUncachedReference > 0) body.cost_usd_uncached_reference = totals.costUsdUncachedReference;
  return body;
}

function turnBody(record: TurnUsageRecord): UsageTurnBody {
  const body: UsageTurnBody = {
    turn: record.turn,
    ts: record.ts,
    model: record.model,
    input_tokens: record.usage.inputTokens,
    ...inputBreakdown(record.usage),
    output_tokens: record.usage.outputTokens,
    total_tokens: record.usage.totalTokens,
    cost_usd: record.cost.costUsd,
  };
  if (record.usage.thoughtsTokens > 0) body.thoughts_tokens = record.usage.thoughtsTokens;
  if (record.usage.toolUseTokens > 0) body.tool_use_tokens = record.usage.toolUseTokens;
  if (record.cost.costUsdUncachedReference > 0) {
    body.cost_usd_uncached_reference = record.cost.costUsdUncachedReference;
  }
  return body;
}
