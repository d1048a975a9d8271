/**
 * Just enough of the Kubernetes protobuf encoding to read a SelfSubjectAccessReview: client-go
 * (kubectl auth can-i) sends built-in types as `application/vnd.kubernetes.protobuf` and does not
 * fall back to JSON. The envelope is the `k8s\0` magic plus runtime.Unknown {typeMeta=1, raw=2};
 * raw is the review {metadata=1, spec=2 {resourceAttributes=1, nonResourceAttributes=2}}.
 * Answers are written as JSON, which the same clients accept.
 */

type Fields = Map<number, Uint8Array[]>;

const MAGIC = [0x6b, 0x38, 0x73, 0x00];

function readVarint(bytes: Uint8Array, start: number): [number, number] {
  let value = 0;
  let shift = 0;
  let index = start;
  while (index < bytes.length) {
    const byte = bytes[index++] ?? 0;
    value += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return [value, index];
    shift += 7;
  }
  throw new Error("truncated varint");
}

/** Length-delimited fields of one message by field number (varint and fixed fields are skipped). */
function readFields(bytes: Uint8Array): Fields {
  const fields: Fields = new Map();
  let index = 0;
  while (index < bytes.length) {
    const [key, afterKey] = readVarint(bytes, index);
    const wireType = key & 0x7;
    const field = Math.floor(key / 8);
    index = afterKey;
    if (wireType === 0) index = readVarint(bytes, index)[1];
    else if (wireType === 1) index += 8;
    else if (wireType === 5) index += 4;
    else if (wireType === 2) {
      const [length, afterLength] = readVarint(bytes, index);
      const value = bytes.subarray(afterLength, afterLength + length);
      fields.set(field, [...(fields.get(field) ?? []), value]);
      index = afterLength + length;
    } else throw new Error(`unsupported wire type ${wireType}`);
  }
  return fields;
}

function text(fields: Fields, field: number): string {
  const value = fields.get(field)?.[0];
  return value ? new TextDecoder().decode(value) : "";
}

function message(fields: Fields, field: number): Fields | undefined {
  const value = fields.get(field)?.[0];
  return value ? readFields(value) : undefined;
}

/** A protobuf SelfSubjectAccessReview → its JSON form, or undefined when the bytes are not one. */
export function decodeAccessReview(bytes: Uint8Array): Record<string, unknown> | undefined {
  try {
    if (!MAGIC.every((byte, index) => bytes[index] === byte)) return undefined;
    const unknown = readFields(bytes.subarray(MAGIC.length));
    const typeMeta = message(unknown, 1);
    if (!typeMeta || text(typeMeta, 2) !== "SelfSubjectAccessReview") return undefined;
    const review = readFields(unknown.get(2)?.[0] ?? new Uint8Array());
    const spec = message(review, 2);
    if (!spec) return undefined;
    const resource = message(spec, 1);
    const nonResource = message(spec, 2);
    const jsonSpec: Record<string, unknown> = {};
    if (resource) {
      const names = ["namespace", "verb", "group", "version", "resource", "subresource", "name"];
      jsonSpec.resourceAttributes = Object.fromEntries(names.map((name, index) => [name, text(resource, index + 1)]));
    }
    if (nonResource) jsonSpec.nonResourceAttributes = { path: text(nonResource, 1), verb: text(nonResource, 2) };
    return { apiVersion: text(typeMeta, 1), kind: "SelfSubjectAccessReview", spec: jsonSpec };
  } catch {
    return undefined;
  }
}
