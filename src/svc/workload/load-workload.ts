/**
 * The entry of the workload layer: `--workload=<value>` to a validated, composed workload
 * (docs/svc-workloads.md#modes). Empty: the trivial coordinator. An existing directory: directory
 * mode. Anything else: a name in the `.agents/` root. Then the dispatch shape (flag, bundle,
 * default), its requirements, the static composition refusals, and `mcp.json` with its cross-check
 * when tool servers are wired. Environment and cwd are parameters; nothing here reads `process`.
 */
import { resolve } from "node:path";
import { type Result, err, ok } from "../../core/result.ts";
import type { BundleFile } from "./bundle-file.ts";
import { loadWorkloadCatalog } from "./catalog-check.ts";
import { compositionProblems } from "./composition-checks.ts";
import { type Environment, isDirectory } from "./config-root.ts";
import { loadWorkloadDirectory } from "./directory-workload.ts";
import { FALLBACK, chooseDispatch, dispatchProblems } from "./dispatch-shape.ts";
import type { LocatedBundle } from "./located-bundle.ts";
import { loadNamedWorkload } from "./named-workload.ts";
import { TRIVIAL_WARNING, trivialBundle } from "./trivial-workload.ts";
import type { LoadedWorkload, Workload } from "./workload.ts";

export interface LoadWorkloadOptions {
  /** `--workload` as given: empty, a directory, or a name. */
  value: string;
  /** `--dispatch` only when the operator typed it. */
  dispatchFlag?: string;
  cwd: string;
  env: Environment;
  /** Tool servers are wired (every model but `echo`): then `mcp.json` is read and cross-checked. */
  wireToolServers: boolean;
  /** The last `.agents` root candidate; `/etc/spar/agents` unless a test moves it. */
  systemConfigDir?: string;
}

function locate(options: LoadWorkloadOptions): Result<LocatedBundle> {
  if (options.value === "")
    return ok({
      bundle: trivialBundle(),
      bundleFile: "no bundle",
      specialists: [],
      source: { kind: "trivial" },
      mcpCatalogPath: resolve(options.cwd, "mcp.json"),
      remoteAgents: [],
      notices: [],
      warnings: [TRIVIAL_WARNING],
    });
  const directory = resolve(options.cwd, options.value);
  if (isDirectory(directory)) return loadWorkloadDirectory(directory);
  const named = loadNamedWorkload(options.value, options.cwd, options.env, options.systemConfigDir);
  if (!named.ok && named.error.startsWith("config: "))
    return err(
      `--workload ${JSON.stringify(options.value)} is not a directory, and as a workload name: ${named.error}`,
    );
  return named;
}

function overrideNotices(bundle: BundleFile): string[] {
  return bundle.toolCatalog.tools
    .filter((tool) => tool.mutating !== undefined)
    .map(
      (tool) =>
        `workload ${bundle.name}: tool ${tool.name} classified ${tool.mutating ? "mutating" : "read-only"} by tool_catalog`,
    );
}

function compose(located: LocatedBundle, dispatchFlag: string | undefined): Result<Workload> {
  const { declaredDispatch, ...fields } = located.bundle;
  const choice = chooseDispatch(dispatchFlag, declaredDispatch, located.specialists);
  if (!choice.ok) return choice;
  const workload: Workload = { ...fields, dispatch: choice.value.shape, specialists: located.specialists };
  const problems = [
    ...dispatchProblems(choice.value, located.specialists, workload.planner.enabled),
    ...compositionProblems(workload),
  ];
  if (problems.length > 0)
    return err(problems.map((problem) => `workload "${workload.name}" (${located.bundleFile}): ${problem}`).join("\n"));
  return ok(workload);
}

/** Resolve, load, validate and compose the workload `--workload` names. */
export function loadWorkload(options: LoadWorkloadOptions): Result<LoadedWorkload> {
  const located = locate(options);
  if (!located.ok) return located;
  const workload = compose(located.value, options.dispatchFlag);
  if (!workload.ok) return workload;
  const loaded: LoadedWorkload = {
    workload: workload.value,
    source: located.value.source,
    remoteAgents: located.value.remoteAgents,
    notices: [...located.value.notices, ...overrideNotices(located.value.bundle)],
    warnings: [...located.value.warnings],
  };
  if (located.value.source.kind !== "trivial") loaded.mcpCatalogPath = located.value.mcpCatalogPath;
  if (
    workload.value.dispatch === "graph" &&
    !workload.value.specialists.some((specialist) => specialist.name === FALLBACK)
  )
    loaded.warnings.push(
      `workload ${workload.value.name}: graph dispatch without a ${FALLBACK} specialist: a route the classifier names that matches no specialist has nowhere to go`,
    );
  if (options.wireToolServers && workload.value.toolCatalog.mcp.length > 0) {
    const catalog = loadWorkloadCatalog(workload.value, located.value.mcpCatalogPath, options.env);
    if (!catalog.ok) return catalog;
    loaded.mcpCatalog = catalog.value;
  }
  return ok(loaded);
}
