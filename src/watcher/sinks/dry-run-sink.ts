/**
 * `--dry-run`: every payload is printed instead of sent, as
 * `--- dry-run payload for session "<sid>" ---` and the payload as 2-space-indented JSON.
 * Opens get synthetic ids `dry-run-<n>` (or the target session in shared mode).
 */
import type { AppendResult, IncidentSink, OpenResult } from "../core/sink.ts";

export class DryRunSink implements IncidentSink {
  readonly name = "dry-run";
  private opened = 0;

  constructor(
    private readonly write: (text: string) => void,
    readonly targetSession?: string,
  ) {}

  async open(payload: object): Promise<OpenResult> {
    const id = this.targetSession ?? `dry-run-${++this.opened}`;
    await this.append(id, payload);
    return { id };
  }

  async append(id: string, payload: object): Promise<AppendResult> {
    this.write(`--- dry-run payload for session ${JSON.stringify(id)} ---\n${JSON.stringify(payload, null, 2)}\n`);
    return { ok: true };
  }
}
