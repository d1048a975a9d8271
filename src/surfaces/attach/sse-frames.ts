/**
 * SSE framing of the attach stream (D6): `event: <name>`, one `data:` line of JSON, a blank
 * line; committed rows go out as `event: agent` with `id: <seq>` (legacy-event.ts), live frames
 * in their attach spelling (wire-frame.ts). Each publication is encoded once and the bytes
 * shared by every subscriber. A subagent instance's rows are not on its parent's stream (they are
 * read from GET /agents/{name}/events, D351): they encode to nothing.
 */
import type { LiveFrame, Publication } from "../../core/events.ts";
import { legacyRow } from "./legacy-event.ts";
import { type WireFrame, wireFrame } from "./wire-frame.ts";

const encoder = new TextEncoder();
const NOTHING = new Uint8Array(0);

export function encodeFrame(name: string, payload: unknown, id?: number): Uint8Array {
  const idLine = id === undefined ? "" : `id: ${id}\n`;
  return encoder.encode(`${idLine}event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`);
}

/** An attach frame in its wire spelling (wire-frame.ts). */
export function encodeWireFrame(frame: WireFrame): Uint8Array {
  return encodeFrame(frame.event, frame.data);
}

/** A domain live frame, spelled for the attach wire. */
export function encodeLiveFrame(frame: LiveFrame): Uint8Array {
  return encodeWireFrame(wireFrame(frame));
}

/**
 * Encodes a listener's publications once each: fan-out hands one publication to every subscriber
 * in a row, so the last one is remembered beside the per-publication cache. One per listener.
 */
export class PublicationEncoder {
  readonly #encoded = new WeakMap<Publication, Uint8Array>();
  #lastPublication: Publication | undefined;
  #lastBytes: Uint8Array | undefined;

  encode(publication: Publication): Uint8Array {
    if (publication === this.#lastPublication && this.#lastBytes) return this.#lastBytes;
    let bytes = this.#encoded.get(publication);
    if (!bytes) {
      bytes =
        publication.type !== "row"
          ? encodeLiveFrame(publication.frame)
          : publication.row.event.branch === undefined
            ? encodeFrame("agent", legacyRow(publication.row), publication.row.seq)
            : NOTHING;
      this.#encoded.set(publication, bytes);
    }
    this.#lastPublication = publication;
    this.#lastBytes = bytes;
    return bytes;
  }
}
