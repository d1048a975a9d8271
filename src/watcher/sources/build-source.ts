/**
 * Builds the runner of one enabled source from its name and a SourceRunnerContext, the same way
 * on the main thread and in the source's worker: a factory of SOURCE_RUNNERS when the source has
 * one (cluster-events, the sources whose inputs are not the Kubernetes API), else the catalog's
 * spec run by a DetectorSource with the settings its reader builds from the flag values.
 */
import { sourceSpec, specForSettings } from "../core/source-catalog.ts";
import { DetectorSource } from "./detector-source.ts";
import { SOURCE_RUNNERS, sourceSettings } from "./source-registry.ts";
import type { SourceRunner, SourceRunnerContext } from "./source-runner.ts";

export function buildSource(name: string, context: SourceRunnerContext): SourceRunner {
  const factory = SOURCE_RUNNERS[name];
  if (factory) return factory(context);
  const spec = sourceSpec(name);
  if (!spec) throw new Error(`source "${name}" is not available in this build`);
  const settings = sourceSettings(name, { values: new Map(context.values) }, { without: context.without });
  return new DetectorSource({ ...context, spec: specForSettings(spec, settings), settings });
}
