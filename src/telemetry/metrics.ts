/**
 * A small metrics registry rendered in the Prometheus text format: counters and gauges with
 * optional labels, gauges either set or read from a callback at scrape time.
 */

type Labels = Record<string, string>;

interface Family {
  name: string;
  help: string;
  type: "counter" | "gauge";
  values: Map<string, { labels: Labels; value: number }>;
  read?: () => number;
}

function labelKey(labels: Labels): string {
  return Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, value]) => `${key}="${value.replace(/["\\\n]/g, "_")}"`)
    .join(",");
}

export class MetricsRegistry {
  readonly #families = new Map<string, Family>();

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
