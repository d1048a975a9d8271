/**
 * The builtin file tools: read_file (read-only), write_file, edit_file and delete_file (edits).
 * Paths resolve inside the workspace root (workspace-path.ts); outputs are capped.
 */
import { mkdir, open, readFile, stat, unlink, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import * as v from "valibot";
import { type BuiltinTool, type ToolContext, type ToolOutcome, capText } from "./builtin-tool.ts";
import { shownPath, workspacePath } from "./workspace-path.ts";

const MAX_CONTENT_CHARS = 4 * 1024 * 1024;
/** Files read whole (line ranges, edits) may be at most this big. */
const MAX_WHOLE_FILE_BYTES = 16 * 1024 * 1024;
const FILE_TIMEOUT_MS = 30_000;

const pathField = v.pipe(
  v.string("path must be a string"),
  v.minLength(1, "path must not be empty"),
  v.maxLength(4096, "path must be at most 4096 characters"),
  v.description("File path, relative to the workspace root (or absolute inside it)."),
);

const failure = (error: string): ToolOutcome => ({ output: { error }, isError: true });

function ioError(error: unknown, path: string): ToolOutcome {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return failure(`${path} does not exist`);
  if (code === "EISDIR") return failure(`${path} is a directory`);
  if (code === "EACCES" || code === "EPERM") return failure(`${path}: permission denied`);
  return failure(`${path}: ${error instanceof Error ? error.message : String(error)}`);
}

/** Resolve, run, and turn file-system errors into results the model can act on. */
async function withPath(
  context: ToolContext,
  path: string,
  body: (absolute: string, shown: string) => Promise<ToolOutcome>,
): Promise<ToolOutcome> {
  const resolved = await workspacePath(context.root, path);
  if (!resolved.ok) return failure(resolved.error);
  const shown = shownPath(context.root, resolved.value);
  try {
    return await body(resolved.value, shown);
  } catch (error) {
    return ioError(error, shown);
  }
}

const ReadInput = v.object({
  path: pathField,
  offset: v.optional(
    v.pipe(
      v.number("offset must be a number"),
      v.integer("offset must be an integer"),
      v.minValue(1, "offset is a 1-based line number"),
      v.description("First line to return (1-based)."),
    ),
  ),
  limit: v.optional(
    v.pipe(
      v.number("limit must be a number"),
      v.integer("limit must be an integer"),
      v.minValue(1, "limit must be at least 1"),
      v.description("Number of lines to return."),
    ),
  ),
});

async function readHead(path: string, bytes: number): Promise<Buffer> {
  const handle = await open(path, "r");
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

export const readFileTool: BuiltinTool<typeof ReadInput> = {
  name: "read_file",
  description:
    "Read a UTF-8 text file in the workspace. Optional offset (1-based first line) and limit (number of lines) select a range. Output is capped; `truncated` says when it was cut.",
  input: ReadInput,
  toolClass: "read-only",
  timeoutMs: FILE_TIMEOUT_MS,
  capBytes: 256 * 1024,
  run: (input, context) =>
    withPath(context, input.path, async (absolute, shown) => {
      const info = await stat(absolute);
      if (info.isDirectory()) return failure(`${shown} is a directory`);
      const ranged = input.offset !== undefined || input.limit !== undefined;
      if (ranged && info.size > MAX_WHOLE_FILE_BYTES)
        return failure(
          `${shown} is larger than ${MAX_WHOLE_FILE_BYTES} bytes; read it without offset/limit to get its head`,
        );
      const raw = ranged
        ? await readFile(absolute, { signal: context.signal })
        : await readHead(absolute, context.capBytes + 4);
      if (raw.subarray(0, 8000).includes(0))
        return failure(`${shown} looks binary (it contains NUL bytes); read_file reads text`);
      let text = raw.toString("utf8");
      if (ranged) {
        const lines = text.split("\n");
        const first = (input.offset ?? 1) - 1;
        text = lines.slice(first, input.limit === undefined ? undefined : first + input.limit).join("\n");
      }
      const capped = capText(text, context.capBytes);
      const output: Record<string, unknown> = { path: shown, content: capped.text, size_bytes: info.size };
      if (capped.truncated || (!ranged && info.size > context.capBytes)) output.truncated = true;
      return { output, isError: false };
    }),
};

const WriteInput = v.object({
  path: pathField,
  content: v.pipe(
    v.string("content must be a string"),
    v.maxLength(MAX_CONTENT_CHARS, `content must be at most ${MAX_CONTENT_CHARS} characters`),
    v.description("The file's complete new content."),
  ),
});

export const writeFileTool: BuiltinTool<typeof WriteInput> = {
  name: "write_file",
  description:
    "Create or overwrite a file in the workspace with the given content; missing parent directories are created.",
  input: WriteInput,
  toolClass: "edit",
  timeoutMs: FILE_TIMEOUT_MS,
  capBytes: 4 * 1024,
  run: (input, context) =>
    withPath(context, input.path, async (absolute, shown) => {
      const existed = await stat(absolute).then(
        (info) => (info.isDirectory() ? "directory" : "file"),
        () => "none",
      );
      if (existed === "directory") return failure(`${shown} is a directory`);
      await mkdir(dirname(absolute), { recursive: true });
      await writeFile(absolute, input.content, { signal: context.signal });
      return {
        output: { path: shown, bytes_written: Buffer.byteLength(input.content, "utf8"), created: existed === "none" },
        isError: false,
      };
    }),
};

const EditInput = v.object({
  path: pathField,
  old_string: v.pipe(
    v.string("old_string must be a string"),
    v.minLength(1, "old_string must not be empty"),
    v.description("Exact text to replace."),
  ),
  new_string: v.pipe(
    v.string("new_string must be a string"),
    v.maxLength(MAX_CONTENT_CHARS, `new_string must be at most ${MAX_CONTENT_CHARS} characters`),
    v.description("Replacement text."),
  ),
  replace_all: v.optional(
    v.pipe(v.boolean("replace_all must be true or false"), v.description("Replace every occurrence (default false).")),
  ),
});

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count++;
  return count;
}

export const editFileTool: BuiltinTool<typeof EditInput> = {
  name: "edit_file",
  description: "Replace text in a workspace file: old_string must occur exactly once unless replace_all is true.",
  input: EditInput,
  toolClass: "edit",
  timeoutMs: FILE_TIMEOUT_MS,
  capBytes: 4 * 1024,
  run: (input, context) =>
    withPath(context, input.path, async (absolute, shown) => {
      const info = await stat(absolute);
      if (info.isDirectory()) return failure(`${shown} is a directory`);
      if (info.size > MAX_WHOLE_FILE_BYTES) return failure(`${shown} is larger than ${MAX_WHOLE_FILE_BYTES} bytes`);
      const text = await readFile(absolute, { encoding: "utf8", signal: context.signal });
      const count = countOccurrences(text, input.old_string);
      if (count === 0) return failure(`old_string was not found in ${shown}`);
      if (count > 1 && input.replace_all !== true)
        return failure(`old_string occurs ${count} times in ${shown}; make it unique or set replace_all`);
      const next =
        input.replace_all === true
          ? text.split(input.old_string).join(input.new_string)
          : text.replace(input.old_string, () => input.new_string);
      await writeFile(absolute, next, { signal: context.signal });
      return { output: { path: shown, replacements: input.replace_all === true ? count : 1 }, isError: false };
    }),
};

const DeleteInput = v.object({ path: pathField });

export const deleteFileTool: BuiltinTool<typeof DeleteInput> = {
  name: "delete_file",
  description: "Delete one file in the workspace (not a directory).",
  input: DeleteInput,
  toolClass: "edit",
  timeoutMs: FILE_TIMEOUT_MS,
  capBytes: 4 * 1024,
  run: (input, context) =>
    withPath(context, input.path, async (absolute, shown) => {
      if (absolute === context.root) return failure("the workspace root cannot be deleted");
      const info = await stat(absolute);
      if (info.isDirectory()) return failure(`${shown} is a directory; delete_file deletes files only`);
      await unlink(absolute);
      return { output: { path: shown, deleted: true }, isError: false };
    }),
};
