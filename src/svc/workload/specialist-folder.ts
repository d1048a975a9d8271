/**
 * Every `.tmpl` of a `specialists/` folder (flat, sorted), loaded and validated; two files
 * declaring the same name are fatal.
 */
import { type Result, err, ok } from "../../core/result.ts";
import { flatScan } from "./config-root.ts";
import { loadSpecialistFile } from "./specialist-file.ts";
import type { Specialist } from "./workload.ts";

export function loadSpecialistFolder(folder: string): Result<Specialist[]> {
  const specialists: Specialist[] = [];
  const problems: string[] = [];
  for (const file of flatScan(folder, [".tmpl"])) {
    const loaded = loadSpecialistFile(file);
    if (!loaded.ok) {
      problems.push(loaded.error);
      continue;
    }
    const twin = specialists.find((specialist) => specialist.name === loaded.value.name);
    if (twin !== undefined)
      problems.push(`specialist "${loaded.value.name}" is declared twice: ${twin.file} and ${file}`);
    else specialists.push(loaded.value);
  }
  if (problems.length > 0) return err(problems.join("\n"));
  return ok(specialists);
}
