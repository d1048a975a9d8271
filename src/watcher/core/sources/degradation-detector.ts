/**
 * The `degradation` source (docs/watcher.md#degradation). Per Service, the ready
 * ratio of its endpoints summed over its EndpointSlices is sampled on every change, samples at
 * least 10s apart (changes closer together fold into the last sample, so one event is one step),
 * over `--degradation-window` (15m). `degradation.capacity` fires when the ratio is still above 0,
 * has dropped by at least `--degradation-drop` (0.3) from the window's start and got there in at
 * least 2 downward steps (a slow bleed, not one cut): a warning, critical at or below 0.5, sent
 * once per level; it is forgotten when the condition no longer holds (D383). uid: the Service's
 * UID from the slices' owner, else `service:<ns>/<name>`. `degradation.probe_flap`: a pod whose
 * Ready condition flips 4 times within the window, once, until its flips fall out of the window.
 * The first list only fills state. Pure.
 */
import { goDuration } from "../go-time.ts";
import type { OpenCondition } from "../open-conditions.ts";
import type { Signal } from "../signal.ts";
import type { Detector, KubeObject, ObjectChange, SourceSpec } from "../source-spec.ts";
import { condition, controller, field, label, listWatch, type Meta, meta, sourceSignal } from "./source-fields.ts";

export interface DegradationSettings {
  windowMs: number;
  /** The ratio drop from the window's start that is a degradation. */
  drop: number;
  minSteps: number;
  sampleGapMs: number;
  criticalRatio: number;
  flips: number;
}

export const DEGRADATION_DEFAULTS: DegradationSettings = {
  windowMs: 15 * 60_000,
  drop: 0.3,
  minSteps: 2,
  sampleGapMs: 10_000,
  criticalRatio: 0.5,
  flips: 4,
};

interface Slice {
  service: string;
  ready: number;
  total: number;
}

interface Sample {
  at: number;
  ratio: number;
}

interface Service {
  meta: Meta;
  slices: Set<string>;
  samples: Sample[];
  /** 0 nothing sent, 1 warning sent, 2 critical sent. */
  level: 0 | 1 | 2;
}

interface PodState {
  meta: Meta;
  ready: boolean;
  flips: number[];
  fired: boolean;
  controllerRef?: string;
}

function sliceState(object: KubeObject, service: string): Slice {
  const endpoints = field(object, "endpoints");
  const list = Array.isArray(endpoints) ? endpoints : [];
  // An endpoint whose ready condition is absent counts as ready (the EndpointSlice API's rule).
  const ready = list.filter((endpoint) => field(endpoint, "conditions", "ready") !== false).length;
  return { service, ready, total: list.length };
}

export class DegradationDetector implements Detector {
  readonly #settings: DegradationSettings;
  readonly #slices = new Map<string, Slice>();
  readonly #services = new Map<string, Service>();
  readonly #pods = new Map<string, PodState>();

  constructor(settings: DegradationSettings) {
    this.#settings = settings;
  }

  get size(): { slices: number; services: number; pods: number; samples: number } {
    const samples = [...this.#services.values()].reduce((sum, one) => sum + one.samples.length, 0);
    return { slices: this.#slices.size, services: this.#services.size, pods: this.#pods.size, samples };
  }

  observe(watch: string, change: ObjectChange, object: KubeObject, now: number, initial: boolean): Signal[] {
    if (watch === "pods") return this.#pod(change, object, now, initial);
    if (watch !== "endpointslices") return [];
    const service = this.#slice(change, object);
    if (!service) return [];
    this.#sample(service, now);
    const signal = initial ? undefined : this.#judge(service, now);
    return signal ? [signal] : [];
  }

  /**
   * What paged and still holds (D437): a Service whose degradation is sent until the ratio recovers
   * (or its slices are gone), a pod whose flaps are sent until they fall out of the window.
   */
  *open(): Iterable<OpenCondition> {
    for (const service of this.#services.values())
      if (service.level > 0) yield { uid: service.meta.uid, reason: "capacity" };
    for (const [uid, pod] of this.#pods) if (pod.fired) yield { uid, reason: "probe_flap" };
  }

  tick(now: number): Signal[] {
    for (const service of this.#services.values()) {
      this.#prune(service, now);
      this.#judge(service, now);
    }
    for (const pod of this.#pods.values()) {
      pod.flips = pod.flips.filter((at) => at > now - this.#settings.windowMs);
      if (pod.flips.length < this.#settings.flips) pod.fired = false;
    }
    return [];
  }

  /** Files the slice under its Service; the Service, or undefined when the slice names none. */
  #slice(change: ObjectChange, object: KubeObject): Service | undefined {
    const slice = meta(object);
    const name = label(object, "kubernetes.io/service-name");
    const before = this.#slices.get(slice.uid);
    const beforeService = before ? this.#services.get(before.service) : undefined;
    if (before && beforeService && (change === "delete" || before.service !== `${slice.namespace}/${name}`)) {
      beforeService.slices.delete(slice.uid);
      if (beforeService.slices.size === 0) this.#services.delete(before.service);
    }
    this.#slices.delete(slice.uid);
    if (change === "delete") return beforeService?.slices.size ? beforeService : undefined;
    if (!name) return undefined;
    const key = `${slice.namespace}/${name}`;
    this.#slices.set(slice.uid, sliceState(object, key));
    const owner = controller(object);
    const service = this.#services.get(key) ?? {
      meta: {
        namespace: slice.namespace,
        name,
        uid: owner?.kind === "Service" && owner.uid ? owner.uid : `service:${key}`,
      },
      slices: new Set<string>(),
      samples: [],
      level: 0,
    };
    service.slices.add(slice.uid);
    this.#services.set(key, service);
    return service;
  }

  #sample(service: Service, now: number): void {
    let ready = 0;
    let total = 0;
    for (const uid of service.slices) {
      const slice = this.#slices.get(uid);
      ready += slice?.ready ?? 0;
      total += slice?.total ?? 0;
    }
    const ratio = total > 0 ? ready / total : 0;
    const last = service.samples[service.samples.length - 1];
    if (last && now - last.at < this.#settings.sampleGapMs) last.ratio = ratio;
    else if (!last || last.ratio !== ratio) service.samples.push({ at: now, ratio });
    this.#prune(service, now);
  }

  /** Keeps the window's samples and the last one before it (the ratio at the window's start). */
  #prune(service: Service, now: number): void {
    const start = now - this.#settings.windowMs;
    const inside = service.samples.findIndex((sample) => sample.at >= start);
    const keepFrom = inside === -1 ? service.samples.length - 1 : Math.max(0, inside - 1);
    if (keepFrom > 0) service.samples.splice(0, keepFrom);
  }

  #judge(service: Service, now: number): Signal | undefined {
    const { samples } = service;
    const first = samples[0];
    const last = samples[samples.length - 1];
    if (!first || !last) return undefined;
    let steps = 0;
    for (let index = 1; index < samples.length; index++)
      if ((samples[index]?.ratio ?? 0) < (samples[index - 1]?.ratio ?? 0)) steps++;
    const { drop, minSteps, criticalRatio } = this.#settings;
    const degraded = last.ratio > 0 && first.ratio - last.ratio >= drop - 1e-9 && steps >= minSteps;
    if (!degraded) {
      service.level = 0;
      return undefined;
    }
    const level = last.ratio <= criticalRatio ? 2 : 1;
    if (level <= service.level) return undefined;
    service.level = level;
    const percent = (ratio: number) => `${Math.round(ratio * 100)}%`;
    const { meta: object } = service;
    return sourceSignal({
      kind: "degradation.capacity",
      reason: "capacity",
      object,
      kindOfObject: "Service",
      severity: level === 2 ? "critical" : "warning",
      now,
      message: `Service ${object.namespace}/${object.name} ready endpoints fell from ${percent(first.ratio)} to ${percent(last.ratio)} in ${steps} steps within ${goDuration(this.#settings.windowMs)}`,
    });
  }

  #pod(change: ObjectChange, object: KubeObject, now: number, initial: boolean): Signal[] {
    const pod = meta(object);
    if (change === "delete") {
      this.#pods.delete(pod.uid);
      return [];
    }
    const ready = condition(object, "Ready")?.status === "True";
    const before = this.#pods.get(pod.uid);
    const owner = controller(object);
    const state: PodState = before ?? { meta: pod, ready, flips: [], fired: false };
    if (owner) state.controllerRef = `${owner.kind}/${owner.name}`;
    this.#pods.set(pod.uid, state);
    if (!before || before.ready === ready) return [];
    state.ready = ready;
    state.flips = [...state.flips.filter((at) => at > now - this.#settings.windowMs), now];
    if (initial || state.fired || state.flips.length < this.#settings.flips) return [];
    state.fired = true;
    return [
      sourceSignal({
        kind: "degradation.probe_flap",
        reason: "probe_flap",
        object: pod,
        kindOfObject: "Pod",
        severity: "warning",
        now,
        message: `Pod ${pod.namespace}/${pod.name} readiness flipped ${state.flips.length} times within ${goDuration(this.#settings.windowMs)}, now ${ready ? "Ready" : "not Ready"}`,
        ...(state.controllerRef ? { controllerRef: state.controllerRef } : {}),
      }),
    ];
  }
}

export const DEGRADATION_SPEC: SourceSpec<DegradationSettings> = {
  name: "degradation",
  reasons: ["capacity", "probe_flap"],
  scope: "cluster",
  required: [...listWatch("", "pods"), ...listWatch("discovery.k8s.io", "endpointslices")],
  watches: [
    { name: "endpointslices", path: "/apis/discovery.k8s.io/v1/endpointslices" },
    { name: "pods", path: "/api/v1/pods" },
  ],
  tickMs: 10_000,
  detector: (settings) => new DegradationDetector(settings),
};
