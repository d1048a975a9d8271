/**
 * ToolsInFront: a tool runner and catalog with a few tools of one kind placed in front of
 * another's (the skill tools, `call_a2a`). The front answers for its tools while it offers them
 * (its specs), shadowing an inner tool of the same name; everything else goes to the inner one.
 */
import type { ToolCall } from "../core/events.ts";
import type { ToolSpec } from "../core/model.ts";
import type { ToolClass } from "../core/permission-policy.ts";
import type { ToolCatalog, ToolInfo, ToolRunOptions, ToolRunResult, ToolRunner } from "../core/tool-catalog.ts";

/** The tools placed in front. */
export interface FrontTools {
  /** The tools offered now; none: every call goes to the inner runner. */
  specs(): readonly ToolSpec[];
  /** The class of every front tool. */
  readonly toolClass: ToolClass;
  /** How the catalog lists them. */
  readonly source: ToolInfo["source"];
  run(call: ToolCall, signal: AbortSignal): Promise<ToolRunResult> | ToolRunResult;
}

export class ToolsInFront implements ToolRunner, ToolCatalog {
  readonly #inner: ToolRunner & ToolCatalog;
  readonly #front: FrontTools;

  constructor(inner: ToolRunner & ToolCatalog, front: FrontTools) {
    this.#inner = inner;
    this.#front = front;
  }

  #mine(name: string): boolean {
    return this.#front.specs().some((spec) => spec.name === name);
  }

  has(name: string): boolean {
    return this.#mine(name) || this.#inner.has(name);
  }

  classOf(name: string): ToolClass | undefined {
    return this.#mine(name) ? this.#front.toolClass : this.#inner.classOf(name);
  }

  async run(call: ToolCall, signal: AbortSignal, options?: ToolRunOptions): Promise<ToolRunResult> {
    return this.#mine(call.name) ? await this.#front.run(call, signal) : await this.#inner.run(call, signal, options);
  }

  specs(): ToolSpec[] {
    const front = this.#front.specs();
    const inner = this.#inner.specs().filter((spec) => !front.some((mine) => mine.name === spec.name));
    return [...inner, ...front];
  }

  list(): ToolInfo[] {
    const front = this.#front.specs();
    const inner = this.#inner.list().filter((info) => !front.some((mine) => mine.name === info.name));
    return [
      ...inner,
      ...front.map((spec) => ({ name: spec.name, description: spec.description, source: this.#front.source })),
    ];
  }
}
