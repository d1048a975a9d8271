/**
 * Fitting a payload to --inject-max-bytes (docs/watcher-pipeline.md#fitting-to---inject-max-bytes):
 * measured in the daemon envelope form `{"message": "<payload JSON>"}`; a payload that fits is left
 * identical; otherwise the enrichment goes first, then the message is cut to its longest prefix (in
 * code points) that fits with the `…[truncated]` marker, else emptied. Identity, counts, timestamps
 * and context are never touched: a payload whose identity alone is too big goes out over the limit.
 * Pure.
 */

export const FIT_MARK = "…[truncated]";

export type ShedPart = "enrichment" | "message";

interface Shrinkable {
  message: string;
  enrichment?: { bundle: string };
}

const encoder = new TextEncoder();

/** Bytes of the payload in the daemon's inject envelope. */
export function envelopeBytes(payload: object): number {
  return encoder.encode(JSON.stringify({ message: JSON.stringify(payload) })).length;
}

export function fitPayload<P extends Shrinkable>(payload: P, maxBytes: number): { payload: P; shed: ShedPart[] } {
  if (envelopeBytes(payload) <= maxBytes) return { payload, shed: [] };
  const shed: ShedPart[] = [];
  let current = payload;
  if (current.enrichment !== undefined) {
    const { enrichment: _dropped, ...rest } = current;
    current = rest as P;
    shed.push("enrichment");
    if (envelopeBytes(current) <= maxBytes) return { payload: current, shed };
  }
  const codePoints = [...current.message];
  const withMessage = (message: string) => ({ ...current, message });
  shed.push("message");
  if (envelopeBytes(withMessage(FIT_MARK)) > maxBytes) return { payload: withMessage(""), shed };
  let low = 0;
  let high = codePoints.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (envelopeBytes(withMessage(codePoints.slice(0, mid).join("") + FIT_MARK)) <= maxBytes) low = mid;
    else high = mid - 1;
  }
  return { payload: withMessage(codePoints.slice(0, low).join("") + FIT_MARK), shed };
}
