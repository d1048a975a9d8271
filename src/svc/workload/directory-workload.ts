/**
 * Directory mode of `--workload` (docs/svc-workloads.md#modes): `<dir>/workload.yaml` exactly (no
 * `.yml`), `<dir>/specialists/` required, every `.tmpl` in it part of the composed spec set sorted
 * by name (not only the listed ones), every listed name loaded, `mcp.json` at `<dir>/mcp.json`.
 * Budget overrides from the environment do not apply here.
 */
import { join } from "node:path";
import { type Result, err, ok } from "../../core/result.ts";
import { parseBundleFile } from "./bundle-file.ts";
import { isDirectory } from "./config-root.ts";
import type { LocatedBundle } from "./located-bundle.ts";
import { readText } from "./read-text.ts";
import { loadSpecialistFolder } from "./specialist-folder.ts";
import { prefixLines } from "./yaml-document.ts";

export function loadWorkloadDirectory(directory: string): Result<LocatedBundle> {
  const bundleFile = join(directory, "workload.yaml");
  const source = readText(bundleFile);
  if (!source.ok) return err(`workload directory ${directory} has no readable workload.yaml (${source.error})`);
  const bundle = parseBundleFile(source.value, bundleFile);
  if (!bundle.ok) return bundle;
  const folder = join(directory, "specialists");
  if (!isDirectory(folder)) return err(`load specialists: ${folder} is not a directory (it is required)`);
  const loaded = loadSpecialistFolder(folder);
  if (!loaded.ok) return err(prefixLines("load specialists: ", loaded.error));
  const specialists = loaded.value.sort((left, right) =>
    left.name < right.name ? -1 : left.name > right.name ? 1 : 0,
  );
  const missing = bundle.value.roster
    .map((name, index) => ({ name, index }))
    .filter(({ name }) => !specialists.some((specialist) => specialist.name === name));
  if (missing.length > 0)
    return err(
      missing
        .map(
          ({ name, index }) =>
            `${bundleFile}: specialists[${index}]: workload "${bundle.value.name}" references specialist "${name}" which is not loaded from ${folder}`,
        )
        .join("\n"),
    );
  return ok({
    bundle: bundle.value,
    bundleFile,
    specialists,
    source: { kind: "directory", directory },
    mcpCatalogPath: join(directory, "mcp.json"),
    remoteAgents: [],
    notices: [],
    warnings: [],
  });
}
