/**
 * One turn of a peer's fresh session, read from its `/events` frames (pure): the turn starts with
 * its prompt's `inbox` dequeued frame or a `status-update` streaming, and ends with the first of
 * `turn-complete`, `turn-error` or `status-update` idle after that start (the opening snapshot's
 * idle is not an end). The answer is the text of the model's committed responses (`agent` rows
 * whose content role is `model`), joined by blank lines, kept up to `maxBytes` (D364): past the
 * cap the rest is dropped as it arrives and `truncated` is set, so a peer cannot grow it.
 */

export type TurnEnd = { kind: "complete" } | { kind: "error"; errorKind: string; message: string };

interface AgentRow {
  event?: { Content?: { role?: unknown; parts?: unknown } | null };
}

/** The text parts of an `agent` row authored by the model, joined; "" for any other row. */
export function modelText(data: unknown): string {
  const content = (data as AgentRow | null)?.event?.Content;
  if (content?.role !== "model" || !Array.isArray(content.parts)) return "";
  return content.parts
    .map((part: unknown) => {
      const text = (part as { text?: unknown } | null)?.text;
      return typeof text === "string" ? text : "";
    })
    .join("");
}

export class PeerTurn {
  readonly #maxBytes: number;
  #started = false;
  #text = "";
  #bytes = 0;
  #truncated = false;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Read one frame (its data parsed); the turn's end when this frame ends it. */
  take(event: string, data: unknown): TurnEnd | undefined {
    const fields = (data ?? {}) as Record<string, unknown>;
    if (event === "inbox" && fields.state === "dequeued") this.#started = true;
    if (event === "status-update") {
      if (fields.turn_state === "streaming") this.#started = true;
      else if (fields.turn_state === "idle" && this.#started) return { kind: "complete" };
    }
    if (event === "agent") this.#keep(modelText(data));
    if (event === "turn-complete") return { kind: "complete" };
    if (event === "turn-error")
      return {
        kind: "error",
        errorKind: typeof fields.kind === "string" ? fields.kind : "unknown",
        message: typeof fields.message === "string" ? fields.message : "the peer's turn failed",
      };
    return undefined;
  }

  /** The answer so far and whether some was dropped. */
  answer(): { text: string; truncated: boolean } {
    return { text: this.#text, truncated: this.#truncated };
  }

  #keep(text: string): void {
    if (text === "" || this.#truncated) {
      if (text !== "") this.#truncated = true;
      return;
    }
    const piece = this.#text === "" ? text : `\n\n${text}`;
    const size = Buffer.byteLength(piece, "utf8");
    if (this.#bytes + size <= this.#maxBytes) {
      this.#text += piece;
      this.#bytes += size;
      return;
    }
    this.#truncated = true;
    const cut = Buffer.from(piece, "utf8")
      .subarray(0, this.#maxBytes - this.#bytes)
      .toString("utf8")
      .replace(/\uFFFD$/, "");
    this.#text += cut;
    this.#bytes += Buffer.byteLength(cut, "utf8");
  }
}
