/**
 * Pod logs (`GET …/pods/{name}/log`): text the scenario sets per container, for the current and
 * the previous (terminated) instance, served with `container`, `previous`, `tailLines` and
 * `limitBytes` applied as the kubelet does (tail first, then the byte cap). A container whose
 * status shows it restarted (`restartCount` above 0 or a `lastState.terminated`) has a previous
 * instance, as on a real node: its log is the text set for it, else empty. Errors are the
 * apiserver's: 404 for a missing pod, 400 for an ambiguous or unknown container or a previous
 * instance the container never had. `follow` is not streamed: the current text is returned and
 * the response ends.
 */
import type { KubeObject } from "./selectors.ts";
import { badRequest, failure, notFound } from "./status.ts";

export interface ContainerLogs {
  current: string;
  /** Output of the previous terminated instance; unset means empty if the container restarted, else none (a 400). */
  previous?: string;
}

function containerNames(pod: KubeObject): string[] {
  const spec = (pod.spec ?? {}) as { containers?: { name?: string }[]; initContainers?: { name?: string }[] };
  return [...(spec.containers ?? []), ...(spec.initContainers ?? [])]
    .map((container) => container.name ?? "")
    .filter((name) => name !== "");
}

/** Whether the container's status shows an instance before the current one (it restarted). */
function restarted(pod: KubeObject, container: string): boolean {
  const status = (pod.status ?? {}) as {
    containerStatuses?: { name?: string; restartCount?: number; lastState?: { terminated?: unknown } }[];
    initContainerStatuses?: { name?: string; restartCount?: number; lastState?: { terminated?: unknown } }[];
  };
  const found = [...(status.containerStatuses ?? []), ...(status.initContainerStatuses ?? [])].find(
    (entry) => entry.name === container,
  );
  return (found?.restartCount ?? 0) > 0 || found?.lastState?.terminated !== undefined;
}

function nonNegativeInteger(value: string | null, name: string): number | undefined | Error {
  if (value === null) return undefined;
  if (!/^\d+$/.test(value)) return new Error(`${name}: Invalid value: "${value}": must be a non-negative integer`);
  return Number(value);
}

export function tailLines(text: string, lines: number): string {
  if (lines === 0) return "";
  const parts = text.split("\n");
  const trailingNewline = text.endsWith("\n");
  if (trailingNewline) parts.pop();
  const kept = parts.slice(-lines).join("\n");
  return trailingNewline ? `${kept}\n` : kept;
}

export class PodLogs {
  private readonly logs = new Map<string, ContainerLogs>();

  set(namespace: string, pod: string, container: string, logs: ContainerLogs): void {
    this.logs.set(`${namespace}/${pod}/${container}`, { ...logs });
  }

  /** Append lines to the current instance's log. */
  append(namespace: string, pod: string, container: string, text: string): void {
    const key = `${namespace}/${pod}/${container}`;
    const existing = this.logs.get(key) ?? { current: "" };
    this.logs.set(key, { ...existing, current: existing.current + text });
  }

  clear(): void {
    this.logs.clear();
  }

  /** Serve one log request for `pod` (already looked up; undefined means not found). */
  serve(namespace: string, name: string, pod: KubeObject | undefined, query: URLSearchParams): Response {
    if (!pod) return notFound("pods", name);
    const names = containerNames(pod);
    let container = query.get("container") ?? "";
    if (container === "") {
      if (names.length !== 1)
        return badRequest(`a container name must be specified for pod ${name}, choose one of: [${names.join(" ")}]`);
      container = names[0] ?? "";
    } else if (!names.includes(container)) {
      return badRequest(`container ${container} is not valid for pod ${name}`);
    }
    const tail = nonNegativeInteger(query.get("tailLines"), "tailLines");
    const limit = nonNegativeInteger(query.get("limitBytes"), "limitBytes");
    if (tail instanceof Error) return failure(422, tail.message);
    if (limit instanceof Error) return failure(422, limit.message);
    if (limit === 0) return failure(422, `limitBytes: Invalid value: 0: must be greater than 0`);
    const stored = this.logs.get(`${namespace}/${name}/${container}`) ?? { current: "" };
    const previous = query.get("previous") === "true" || query.get("previous") === "1";
    if (previous && stored.previous === undefined && !restarted(pod, container))
      return badRequest(`previous terminated container "${container}" in pod "${name}" not found`);
    let text = previous ? (stored.previous ?? "") : stored.current;
    if (tail !== undefined) text = tailLines(text, tail);
    let bytes = new TextEncoder().encode(text);
    if (limit !== undefined && bytes.length > limit) bytes = bytes.slice(0, limit);
    return new Response(bytes, { headers: { "content-type": "text/plain" } });
  }
}
