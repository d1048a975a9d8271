/**
 * SSE framing of the attach stream (D6): `event: <name>`, one `data:` line of JSON, a blank
 * line; committed rows go out as `event: agent` with `id: <seq>`. Each publication is encoded
 * once and the bytes shared by every subscriber.
 */
import type { LiveFrame, Publication } from "../../core/events.ts";
import { legacyRow } from "./legacy-event.ts";

const encoder = new TextEncoder();
const encoded = new WeakMap<Publication, Uint8Array>();

export function encodeFrame(name: string, payload: unknown, id?: number): Uint8Array {
  const idLine = id === undefined ? "" : `id: ${id}\n`;
  return encoder.encode(`${idLine}event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`);
}

export function encodeLiveFrame(frame: LiveFrame): Uint8Array {
  const { type, ...payload } = frame;
  return encodeFrame(type, payload);
}

/** Fan-out hands one publication to every subscriber in a row: remember the last one. */
let lastPublication: Publication | undefined;
let lastBytes: Uint8Array | undefined;

export function encodePublication(publication: Publication): Uint8Array {
  if (publication === lastPublication && lastBytes) return lastBytes;
  const cached = encoded.get(publication);
  if (cached) {
    lastPublication = publication;
    lastBytes = cached;
    return cached;
  }
  const bytes =
    publication.type === "row"
      ? encodeFrame("agent", legacyRow(publication.row), publication.row.seq)
      : encodeLiveFrame(publication.frame);
  encoded.set(publication, bytes);
  lastPublication = publication;
  lastBytes = bytes;
  return bytes;
}
