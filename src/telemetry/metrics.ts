/**
 * A small metrics registry rendered in the Prometheus text format: counters and gauges with
 * optional labels, gauges either set or read from a callback at scrape time, and histograms with
 * fixed buckets.
 */

type Labels = Record<string, string>;

interface Family {
  name: string;
  help: string;
  type: "counter" | "gauge";
  values: Map<string, { labels: Labels; value: number }>;
  read?: () => number;
}

interface Histogram {
  name: string;
  help: string;
  buckets: readonly number[];
  values: Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>;
}

function labelKey(labels: Labels): string {
  return Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, value]) => `${key}="${value.replace(/["\\\n]/g, "_")}"`)
    .join(",");
}

export class MetricsRegistry {
  readonly #families = new Map<string, Family>();
  readonly #histograms = new Map<string, Histogram>();

  counter(name: string, help: string): (labels?: Labels, by?: number) => void {
    const family = this.#family(name, help, "counter");
    return (labels = {}, by = 1) => {
      const key = labelKey(labels);
      const entry = family.values.get(key) ?? { labels, value: 0 };
      entry.value += by;
      family.values.set(key, entry);
    };
  }

  /** A gauge read at scrape time. */
  gauge(name: string, help: string, read: () => number): void {
    this.#family(name, help, "gauge").read = read;
  }

  /** A histogram with fixed upper bounds (`le`), ascending; `+Inf` is implied. */
  histogram(name: string, help: string, buckets: readonly number[]): (labels: Labels, value: number) => void {
    const histogram = this.#histograms.get(name) ?? { name, help, buckets, values: new Map() };
    this.#histograms.set(name, histogram);
    return (labels, value) => {
      const key = labelKey(labels);
      const entry = histogram.values.get(key) ?? { labels, counts: buckets.map(() => 0), sum: 0, count: 0 };
      buckets.forEach((bound, index) => {
        if (value <= bound) entry.counts[index] = (entry.counts[index] ?? 0) + 1;
      });
      entry.sum += value;
      entry.count += 1;
      histogram.values.set(key, entry);
    };
  }

  render(): string {
    const lines: string[] = [];
    for (const family of this.#families.values()) {
      lines.push(`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${family.type}`);
      if (family.read) lines.push(`${family.name} ${family.read()}`);
      for (const { labels, value } of family.values.values()) {
        const key = labelKey(labels);
        lines.push(`${family.name}${key ? `{${key}}` : ""} ${value}`);
      }
    }
    for (const histogram of this.#histograms.values()) lines.push(...renderHistogram(histogram));
    return `${lines.join("\n")}\n`;
  }

  #family(name: string, help: string, type: Family["type"]): Family {
    const existing = this.#families.get(name);
    if (existing) return existing;
    const family: Family = { name, help, type, values: new Map() };
    this.#families.set(name, family);
    return family;
  }
}

function renderHistogram(histogram: Histogram): string[] {
  const { name } = histogram;
  const lines = [`# HELP ${name} ${histogram.help}`, `# TYPE ${name} histogram`];
  for (const { labels, counts, sum, count } of histogram.values.values()) {
    const key = labelKey(labels);
    const prefix = key ? `${key},` : "";
    for (const [index, bound] of histogram.buckets.entries())
      lines.push(`${name}_bucket{${prefix}le="${bound}"} ${counts[index]}`);
    lines.push(`${name}_bucket{${prefix}le="+Inf"} ${count}`);
    lines.push(`${name}_sum${key ? `{${key}}` : ""} ${sum}`, `${name}_count${key ? `{${key}}` : ""} ${count}`);
  }
  return lines;
}
