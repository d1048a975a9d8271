/**
 * A session's digest counters (D355): calls and bytes and tokens saved per strategy, and the
 * agentic summaries' own usage. Counted from each tool-result row's digest record as it commits,
 * and again from the rows when a session is rebuilt, so GET /usage (`digest_methods`) and GET
 * /context (`digest_savings`) read the same after a restart. Pure.
 */

export const DIGEST_METHODS = ["structural", "agentic", "passthrough"] as const;
export type DigestMethod = (typeof DIGEST_METHODS)[number];

/** What the tally reads of a digest record (src/core/digest.ts's DigestRecord). */
export interface CountedDigest {
  method: DigestMethod;
  rawBytes: number;
  digestBytes: number;
  rawTokensEst: number;
  digestTokensEst: number;
  subagent?: {
    usage: { inputTokens: number; outputTokens: number; thoughtsTokens: number };
    cost: { costUsd: number };
  };
}

/** GET /context's `digest_savings`. */
export interface DigestSavings {
  structural_calls: number;
  structural_tokens_saved: number;
  agentic_calls: number;
  agentic_tokens_saved: number;
  agentic_subagent_input_tokens: number;
  agentic_subagent_output_tokens: number;
  agentic_subagent_cost_usd: number;
  passthrough_calls: number;
}

/** GET /usage's `digest_methods`: keys only for methods used (and, for bytes, that saved any). */
export interface DigestMethodsBody {
  counts?: Record<string, number>;
  bytes_saved?: Record<string, number>;
}

export class DigestTally {
  readonly #counts = new Map<DigestMethod, number>();
  readonly #bytesSaved = new Map<DigestMethod, number>();
  readonly #tokensSaved = new Map<DigestMethod, number>();
  #subagentInput = 0;
  #subagentOutput = 0;
  #subagentCost = 0;

  add(record: CountedDigest): void {
    const bump = (map: Map<DigestMethod, number>, by: number) =>
      map.set(record.method, (map.get(record.method) ?? 0) + by);
    bump(this.#counts, 1);
    if (record.method !== "passthrough") {
      bump(this.#bytesSaved, Math.max(0, record.rawBytes - record.digestBytes));
      bump(this.#tokensSaved, Math.max(0, record.rawTokensEst - record.digestTokensEst));
    }
    if (record.subagent) {
      this.#subagentInput += record.subagent.usage.inputTokens;
      this.#subagentOutput += record.subagent.usage.outputTokens + record.subagent.usage.thoughtsTokens;
      this.#subagentCost += record.subagent.cost.costUsd;
    }
  }

  get empty(): boolean {
    return this.#counts.size === 0;
  }

  /** `digest_methods`, or undefined when no tool result was counted (the key is then omitted). */
  methodsBody(): DigestMethodsBody | undefined {
    if (this.#counts.size === 0) return undefined;
    const body: DigestMethodsBody = { counts: Object.fromEntries(this.#counts) };
    if (this.#bytesSaved.size > 0) body.bytes_saved = Object.fromEntries(this.#bytesSaved);
    return body;
  }

  savings(): DigestSavings {
    return {
      structural_calls: this.#counts.get("structural") ?? 0,
      structural_tokens_saved: this.#tokensSaved.get("structural") ?? 0,
      agentic_calls: this.#counts.get("agentic") ?? 0,
      agentic_tokens_saved: this.#tokensSaved.get("agentic") ?? 0,
      agentic_subagent_input_tokens: this.#subagentInput,
      agentic_subagent_output_tokens: this.#subagentOutput,
      agentic_subagent_cost_usd: this.#subagentCost,
      passthrough_calls: this.#counts.get("passthrough") ?? 0,
    };
  }
}
