/**
 * What a session's executor asks of its subagents (D351): the roster, and launching an instance.
 * Types only, so that the executor's types do not import the turn (SessionSubagents implements it).
 */
import type { SubagentInstance, SubagentMode, SubagentSpec } from "../core/subagents.ts";

export interface SubagentPort {
  readonly roster: readonly SubagentSpec[];
  /** Launch an instance; sync resolves with its answer, async once its start row is committed. */
  launch(
    name: string,
    task: string,
    mode: SubagentMode,
    signal?: AbortSignal,
  ): Promise<{ instance: SubagentInstance; answer: string }>;
}
