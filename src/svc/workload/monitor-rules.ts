/**
 * The `monitor:` block of a bundle (docs/svc-workloads.md#workloadyaml-keys): collect entries keyed
 * by `as` or their tool, unique; `transitions_from` names a collect key; `notify` needs a
 * conversation; collect and notify need `edge_trigger.scheduled`; the ack tool's args must not set
 * `subject_key` or `ack_by`, and the ack tool is not also a collect tool. Parsed and validated now,
 * used by a later issue. Pure.
 */
import type { RawMonitor } from "./bundle-schema.ts";
import type { Monitor } from "./workload.ts";

const RESERVED_ACK_ARGUMENTS = ["subject_key", "ack_by"];

/** The problems of a monitor block as [dotted path, message] pairs. */
export function checkMonitor(monitor: RawMonitor | undefined, scheduled: boolean): [string, string][] {
  if (monitor === undefined) return [];
  const problems: [string, string][] = [];
  const keys = new Set<string>();
  monitor.collect.forEach((entry, index) => {
    const key = entry.as ?? entry.tool;
    if (keys.has(key)) problems.push([`monitor.collect[${index}]`, `duplicate collect key ${JSON.stringify(key)}`]);
    keys.add(key);
  });
  if (monitor.collect.length > 0 && !scheduled)
    problems.push(["monitor.collect", "needs edge_trigger.scheduled (a monitor collects on a schedule)"]);
  if (monitor.transitions_from !== undefined && !keys.has(monitor.transitions_from))
    problems.push([
      "monitor.transitions_from",
      `expected one of the collect keys [${[...keys].join(", ")}], got ${JSON.stringify(monitor.transitions_from)}`,
    ]);
  if (monitor.notify !== undefined && !scheduled)
    problems.push(["monitor.notify", "needs edge_trigger.scheduled (a monitor notifies on a schedule)"]);
  const ack = monitor.ack;
  if (ack !== undefined) {
    for (const name of RESERVED_ACK_ARGUMENTS)
      if (name in ack.args) problems.push([`monitor.ack.args.${name}`, "is set by the daemon and must not be given"]);
    if (monitor.collect.some((entry) => entry.tool === ack.tool))
      problems.push([
        "monitor.ack.tool",
        `${JSON.stringify(ack.tool)} is also a collect tool: use a separate ack tool`,
      ]);
  }
  return problems;
}

export function toMonitor(raw: RawMonitor): Monitor {
  const monitor: Monitor = {
    collect: raw.collect.map((entry) => ({ tool: entry.tool, args: entry.args, key: entry.as ?? entry.tool })),
  };
  if (raw.transitions_from !== undefined) monitor.transitionsFrom = raw.transitions_from;
  if (raw.notify !== undefined)
    monitor.notify = {
      conversation: raw.notify.conversation,
      ...(raw.notify.digest_after === undefined ? {} : { digestAfterMs: raw.notify.digest_after }),
    };
  if (raw.ack !== undefined) monitor.ack = { tool: raw.ack.tool, args: raw.ack.args };
  return monitor;
}
