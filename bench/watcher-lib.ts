/**
 * What bench/watcher.ts's cases share: the simulated cluster on the fake apiserver (a pool of
 * crash-looping pods over some nodes, repeat events, fresh incidents that churn pods), the child
 * process under test (bench/watcher-child.ts over Bun IPC) and the closed loop that keeps at most
 * WINDOW events ahead of what the child has seen.
 */
import { join } from "node:path";
import type { FakeApiserver } from "../scripts/fake-apiserver/server.ts";
import { BUN, REPO_ROOT, nowMs, rssKiB, track } from "./lib.ts";

export const WINDOW = 5000;
const NAMESPACES = 20;
const ZONES = 3;

type Obj = Record<string, unknown>;
export const log = (text: string) => process.stderr.write(`${text}\n`);
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface ClusterShape {
  /** Crash-looping pods whose events repeat. */
  pods: number;
  /** Nodes the pods are spread over (zone-labelled, for topology-drift). */
  nodes: number;
  /** Fresh-incident pods kept before the oldest is deleted. */
  churn: number;
}

export class Cluster {
  private readonly pool: Array<{ pod: Obj; event?: Obj }> = [];
  private readonly churn: Array<{ pod: Obj; event: Obj }> = [];
  private serial = 0;
  private next = 0;

  constructor(
    private readonly api: FakeApiserver,
    private readonly shape: ClusterShape,
  ) {
    for (let i = 0; i < shape.nodes; i++)
      api.scenario.createNode({ name: `node-${i}`, labels: { "topology.kubernetes.io/zone": `zone-${i % ZONES}` } });
    for (let i = 0; i < shape.pods; i++) this.pool.push({ pod: this.newPod(`pool-${i}`) });
  }

  private newPod(name: string): Obj {
    return this.api.scenario.createPod({
      namespace: `ns-${this.serial++ % NAMESPACES}`,
      name,
      node: `node-${this.serial % this.shape.nodes}`,
      containers: [
        { name: "app", image: "registry.example/app:v1", waitingReason: "CrashLoopBackOff", restartCount: 5 },
      ],
    } as never);
  }

  private record(pod: Obj, at: number): Obj {
    return this.api.scenario.recordEvent({
      involvedObject: pod,
      reason: "BackOff",
      message: "Back-off restarting failed container app",
      type: "Warning",
      source: { component: "kubelet", host: "node-1" },
      fieldPath: "spec.containers{app}",
      lastTimestamp: new Date(at).toISOString(),
      distinct: true,
    } as never);
  }

  /** A brand-new incident: a new pod and its first event; the oldest churn pod and event are deleted. */
  fresh(at: number): string {
    const name = `churn-${this.serial}`;
    const pod = this.newPod(name);
    this.churn.push({ pod, event: this.record(pod, at) });
    if (this.churn.length > this.shape.churn) {
      const old = this.churn.shift();
      for (const object of [old?.event, old?.pod]) {
        const meta = (object?.metadata ?? {}) as { namespace?: string; name?: string };
        if (object)
          this.api.scenario.delete({
            apiVersion: "v1",
            kind: String(object.kind),
            namespace: meta.namespace,
            name: String(meta.name),
          } as never);
      }
    }
    return name;
  }

  /** A repeat of a pool pod's event (count+1), or its first one. */
  repeat(at: number): void {
    const slot = this.pool[this.next++ % this.pool.length] as { pod: Obj; event?: Obj };
    if (!slot.event) {
      slot.event = this.record(slot.pod, at);
      return;
    }
    slot.event = this.api.scenario.update({
      ...slot.event,
      count: Number(slot.event.count ?? 1) + 1,
      lastTimestamp: new Date(at).toISOString(),
    });
  }
}

export interface Child {
  proc: ReturnType<typeof Bun.spawn>;
  seen: number;
  heap: number;
  /** The child's main-thread event-loop lag since its last `lag-reset`: p50, p99, max (ms). */
  lag: [number, number, number];
  /** The watcher's `watcher_active_incidents` and `watcher_recovery_tracking` gauges, last report. */
  gauges: Record<string, number>;
  injects: Map<string, number>;
  stop(): Promise<void>;
}

export interface ChildOptions {
  smol?: boolean;
  flags?: string[];
  env?: Record<string, string>;
}

interface ChildMessage {
  ready?: boolean;
  seen?: number;
  heap?: number;
  lag?: [number, number, number];
  gauges?: Record<string, number>;
}

export async function spawnChild(
  mode: "watcher" | "raw",
  kubeconfig: string,
  options: ChildOptions = {},
): Promise<Child> {
  let ready: () => void = () => {};
  const started = new Promise<void>((resolve) => {
    ready = resolve;
  });
  const child: Child = {
    seen: 0,
    heap: 0,
    lag: [0, 0, 0],
    gauges: {},
    injects: new Map(),
    proc: Bun.spawn(
      [
        BUN,
        ...(options.smol ? ["--smol"] : []),
        join(REPO_ROOT, "bench/watcher-child.ts"),
        mode,
        kubeconfig,
        ...(options.flags ?? []),
      ],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, ...options.env },
        stdin: "ignore",
        stdout: "pipe",
        stderr: "inherit",
        ipc: (message: ChildMessage) => {
          if (message.ready) ready();
          if (typeof message.seen === "number") child.seen = message.seen;
          if (typeof message.heap === "number") child.heap = message.heap;
          if (message.lag) child.lag = message.lag;
          if (message.gauges) child.gauges = message.gauges;
        },
      },
    ),
    stop: async () => {
      child.proc.kill("SIGKILL");
      await child.proc.exited;
    },
  };
  track(child.proc);
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of child.proc.stdout as ReadableStream<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      const lines = buffer.split("\n");
      buffer = lines.pop() ?? "";
      for (const line of lines) {
        const [, name, at] = line.split(" ");
        if (name && at && !child.injects.has(name)) child.injects.set(name, Number(at));
      }
    }
  })();
  await started;
  return child;
}

export interface LoopOptions {
  events: number;
  simStart: number;
  /** Simulated ms per event (the pipeline's clock advances this much per event). */
  simStepMs: number;
  /** One event in this many is a fresh incident (a new pod), the rest repeats. */
  freshEvery?: number;
}

/** Closed loop: `events` events, at most WINDOW ahead of the child; events/s and RSS/heap per simulated minute. */
export async function closedLoop(
  cluster: Cluster,
  child: Child,
  options: LoopOptions,
): Promise<{ rate: number; rss: number[]; heap: number[] }> {
  const { events, simStart, simStepMs } = options;
  const freshEvery = options.freshEvery ?? 50;
  const base = child.seen;
  const rss: number[] = [rssKiB(child.proc.pid)];
  const heap: number[] = [child.heap];
  const perMinute = Math.round(60_000 / simStepMs);
  const started = nowMs();
  let created = 0;
  while (created < events) {
    if (created - (child.seen - base) > WINDOW) {
      await sleep(2);
      continue;
    }
    const batch = Math.min(250, events - created);
    for (let i = 0; i < batch; i++) {
      const at = simStart + (created + i) * simStepMs;
      if ((created + i) % freshEvery === 0) cluster.fresh(at);
      else cluster.repeat(at);
      if ((created + i + 1) % perMinute === 0) {
        rss.push(rssKiB(child.proc.pid));
        heap.push(child.heap);
      }
    }
    created += batch;
    child.proc.send({ sim: simStart + created * simStepMs });
    await sleep(0);
  }
  const deadline = Date.now() + 120_000;
  while (child.seen - base < events && Date.now() < deadline) await sleep(5);
  const seconds = (nowMs() - started) / 1000;
  if (child.seen - base < events) log(`  only ${child.seen - base} of ${events} events seen`);
  return { rate: (child.seen - base) / seconds, rss, heap };
}
