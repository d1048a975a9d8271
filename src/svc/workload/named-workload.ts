/**
 * Name mode of `--workload` (docs/svc-workloads.md#modes): the one config root, its flat scans
 * (bundles, specialists, a2a registrations, each parsed and validated; duplicate names fatal; a
 * bundle naming an unknown specialist fatal), the bundle whose `name:` is the value, its listed
 * specialists in roster order, `<root>/mcp.json`, and the budget overrides from the environment.
 */
import { join } from "node:path";
import { type Result, err, ok } from "../../core/result.ts";
import { applyBudgetOverrides } from "./budget-overrides.ts";
import { type BundleFile, parseBundleFile } from "./bundle-file.ts";
import { type Environment, findConfigRoot, flatScan } from "./config-root.ts";
import type { LocatedBundle } from "./located-bundle.ts";
import { readText } from "./read-text.ts";
import { parseRemoteAgentFile } from "./remote-agent-file.ts";
import { loadSpecialistFolder } from "./specialist-folder.ts";
import type { RemoteAgent, Specialist } from "./workload.ts";

interface Named {
  name: string;
  file: string;
}

/** Parse every file with `parse`; collect every error; refuse two files declaring one name. */
function loadAll<T extends Named>(files: string[], parse: (source: string, file: string) => Result<T>, what: string) {
  const items: T[] = [];
  const problems: string[] = [];
  for (const file of files) {
    const source = readText(file);
    const parsed = source.ok ? parse(source.value, file) : source;
    if (!parsed.ok) {
      problems.push(parsed.error);
      continue;
    }
    const twin = items.find((item) => item.name === parsed.value.name);
    if (twin !== undefined) problems.push(`${what} "${parsed.value.name}" is declared twice: ${twin.file} and ${file}`);
    else items.push(parsed.value);
  }
  return problems.length > 0 ? err(problems.join("\n")) : ok(items);
}

/** Every `*.yaml` / `*.yml` of an `a2a` folder (none when it is missing); every problem reported at once. */
export function loadRemoteAgents(folder: string): Result<RemoteAgent[]> {
  return loadAll<RemoteAgent>(flatScan(folder, [".yaml", ".yml"]), parseRemoteAgentFile, "a2a agent");
}

type BundleEntry = BundleFile & Named;

function parseBundleEntry(source: string, file: string): Result<BundleEntry> {
  const parsed = parseBundleFile(source, file);
  return parsed.ok ? ok({ ...parsed.value, file }) : parsed;
}

function unknownSpecialists(bundles: readonly BundleEntry[], specialists: readonly Specialist[], folder: string) {
  return bundles.flatMap((bundle) =>
    bundle.roster
      .map((name, index) => ({ name, index }))
      .filter(({ name }) => !specialists.some((specialist) => specialist.name === name))
      .map(
        ({ name, index }) =>
          `${bundle.file}: specialists[${index}]: workload "${bundle.name}" names specialist "${name}", not found in ${folder}`,
      ),
  );
}

export function loadNamedWorkload(
  value: string,
  cwd: string,
  env: Environment,
  systemConfigDir?: string,
): Result<LocatedBundle> {
  const root = findConfigRoot(cwd, env, systemConfigDir);
  if (!root.ok) return root;
  const folder = join(root.value.path, "specialists");
  const specialists = loadSpecialistFolder(folder);
  if (!specialists.ok) return specialists;
  const bundles = loadAll(
    flatScan(join(root.value.path, "workloads"), [".yaml", ".yml"]),
    parseBundleEntry,
    "workload",
  );
  if (!bundles.ok) return bundles;
  const unknown = unknownSpecialists(bundles.value, specialists.value, folder);
  if (unknown.length > 0) return err(unknown.join("\n"));
  const agents = loadRemoteAgents(join(root.value.path, "a2a"));
  if (!agents.ok) return agents;
  const entry = bundles.value.find((candidate) => candidate.name === value);
  if (entry === undefined)
    return err(
      `workload "${value}" not found in config root ${root.value.path} (source ${root.value.source}; available: [${bundles.value.map((candidate) => candidate.name).join(" ")}]) and it is not a directory path`,
    );
  const { file, ...found } = entry;
  const budget = applyBudgetOverrides(found.budget, env);
  if (!budget.ok) return budget;
  return ok({
    bundle: { ...found, budget: budget.value },
    bundleFile: file,
    specialists: found.roster.map(
      (name) => specialists.value.find((specialist) => specialist.name === name) as Specialist,
    ),
    source: { kind: "name", root: root.value.path, rootSource: root.value.source, file },
    mcpCatalogPath: join(root.value.path, "mcp.json"),
    remoteAgents: agents.value,
    notices: root.value.notices,
    warnings: root.value.warnings,
  });
}
