/**
 * Reading one workload file as text, the failure worded like every other load error. The only
 * file reads of this layer are here, in output-schema.ts and in specialist-file.ts.
 */
import { readFileSync } from "node:fs";
import { type Result, err, ok } from "../../core/result.ts";

export function readText(path: string): Result<string> {
  try {
    return ok(readFileSync(path, "utf8"));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return err(`${path}: cannot read (${code === "ENOENT" ? "no such file" : (code ?? String(error))})`);
  }
}
