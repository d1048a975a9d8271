/**
 * POST /reload's seam (D134): each reloadable part of the daemon registers a function that
 * re-reads its configuration and answers how many items it now holds plus its problems. The
 * route runs them all (one at a time, in registration order) and answers
 * `{memory, skills, mcp, errors}`: counts per part, 0 for a part nobody registered (MCP until
 * its manager registers `mcp`), and every problem prefixed with its part. A part that throws is
 * reported, never a 500; the others still reload.
 */
export interface ReloadPart {
  count: number;
  errors: readonly string[];
}

export type Reloader = () => ReloadPart | Promise<ReloadPart>;

export interface ReloadResult {
  memory: number;
  skills: number;
  mcp: number;
  errors: string[];
  [part: string]: number | string[];
}

export class ReloadRegistry {
  readonly #parts = new Map<string, Reloader>();
  #running: Promise<ReloadResult> | undefined;

  /** Register (or replace) the reloader of a part: `memory`, `skills`, `mcp`, or a new one. */
  register(part: string, reloader: Reloader): void {
    this.#parts.set(part, reloader);
  }

  /** Reload every part; concurrent calls share one run. */
  reloadAll(): Promise<ReloadResult> {
    this.#running ??= this.#run().finally(() => (this.#running = undefined));
    return this.#running;
  }

  async #run(): Promise<ReloadResult> {
    const result: ReloadResult = { memory: 0, skills: 0, mcp: 0, errors: [] };
    for (const [part, reloader] of this.#parts) {
      try {
        const outcome = await reloader();
        result[part] = outcome.count;
        for (const error of outcome.errors) result.errors.push(`${part}: ${error}`);
      } catch (error) {
        result.errors.push(`${part}: reload failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    return result;
  }
}
