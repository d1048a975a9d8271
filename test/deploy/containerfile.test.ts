/**
 * deploy/Containerfile without a container builder (no podman, buildah or docker here): its build
 * stage is replayed in a temporary directory holding exactly the files its COPY lines name (the
 * dependencies ensure-bun.sh installs are linked in), its build command runs there and must write
 * the file the runtime stage copies, and that binary runs. The runtime stage must be a minimal
 * non-root image whose entrypoint is the copied binary (D470).
 */
import { expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { entrypoints } from "../../scripts/build.ts";
import { tempDir } from "../support/daemon.ts";
import { DEPLOY_DIR, REPO_ROOT } from "../support/deploy-manifests.ts";

interface Stage {
  image: string;
  name: string | undefined;
  instructions: { op: string; args: string }[];
}

function parseContainerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  const lines = text.replace(/\\\n/g, " ").split("\n");
  for (const raw of lines) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const [op = "", ...rest] = line.split(/\s+/);
    const args = rest.join(" ");
    if (op.toUpperCase() === "FROM") {
      const [image = "", as, name] = args.split(/\s+/);
      stages.push({ image, name: as?.toUpperCase() === "AS" ? name : undefined, instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`${op} before FROM`);
    stage.instructions.push({ op: op.toUpperCase(), args });
  }
  return stages;
}

const containerfile = parseContainerfile(readFileSync(join(DEPLOY_DIR, "Containerfile"), "utf8"));
const build = containerfile[0] as Stage;
const runtime = containerfile.at(-1) as Stage;

test("two stages: a named build stage and a minimal non-root runtime stage that runs the copied binary", () => {
  expect(containerfile).toHaveLength(2);
  expect(build.name).toBe("build");
  expect(runtime.image).toMatch(/^gcr\.io\/distroless\/[a-z0-9-]+:nonroot$/);
  const ops = runtime.instructions.map((instruction) => instruction.op);
  expect(ops).toEqual(["COPY", "USER", "ENTRYPOINT"]);
  const user = runtime.instructions.find((instruction) => instruction.op === "USER")?.args ?? "";
  expect(user).toMatch(/^[1-9]\d*:[1-9]\d*$/);
  const copy = runtime.instructions.find((instruction) => instruction.op === "COPY")?.args.split(/\s+/) ?? [];
  expect(copy[0]).toBe(`--from=${build.name}`);
  const entrypoint = JSON.parse(runtime.instructions.find((i) => i.op === "ENTRYPOINT")?.args ?? "[]") as string[];
  expect(entrypoint).toEqual([copy[2] ?? "no destination"]);
});

test("the build stage, replayed on its COPY set, writes the file the runtime stage copies, and it runs", async () => {
  const root = tempDir();
  let workdir = root;
  let built: string | undefined;
  for (const { op, args } of build.instructions) {
    if (op === "WORKDIR") {
      workdir = join(root, args);
      mkdirSync(workdir, { recursive: true });
    } else if (op === "COPY") {
      // As a builder copies: a directory's contents into the destination, a file into a
      // destination ending in "/" (or taking several sources) under its own name.
      const parts = args.split(/\s+/);
      const rawDestination = parts.pop() ?? "";
      const destination = join(workdir, rawDestination);
      for (const source of parts) {
        const from = join(REPO_ROOT, source);
        expect(existsSync(from), `COPY ${source}`).toBe(true);
        const into = rawDestination.endsWith("/") || parts.length > 1;
        const target = statSync(from).isDirectory() || !into ? destination : join(destination, basename(source));
        mkdirSync(dirname(target), { recursive: true });
        cpSync(from, target, { recursive: true });
      }
    } else if (op === "RUN" && args === "scripts/ensure-bun.sh") {
      // What ensure-bun.sh leaves behind: the pinned Bun in .tools/ and the locked dependencies.
      expect(existsSync(join(workdir, "scripts/ensure-bun.sh"))).toBe(true);
      symlinkSync(join(REPO_ROOT, ".tools"), join(workdir, ".tools"));
      symlinkSync(join(REPO_ROOT, "node_modules"), join(workdir, "node_modules"));
    } else if (op === "RUN") {
      const match = /^(\.tools\/node_modules\/\.bin\/bun) (scripts\/build\.ts) --outfile=(\/\S+)$/.exec(args);
      if (!match) throw new Error(`unexpected RUN in the build stage: ${args}`);
      built = match[3] as string;
      // Every entrypoint of the checkout (src/main.ts and each worker) is in the stage: a worker
      // left out would build without complaint and be ModuleNotFound in the binary.
      const relativeTo = (base: string) => (paths: string[]) => paths.map((path) => relative(base, path));
      expect(relativeTo(workdir)(entrypoints(workdir))).toEqual(relativeTo(REPO_ROOT)(entrypoints(REPO_ROOT)));
      const outfile = join(root, built);
      const run = Bun.spawnSync([join(workdir, match[1] as string), match[2] as string, `--outfile=${outfile}`], {
        cwd: workdir,
        stdout: "pipe",
        stderr: "pipe",
      });
      expect(run.stderr.toString()).toBe("");
      expect(run.exitCode).toBe(0);
    } else throw new Error(`unexpected ${op} in the build stage`);
  }
  const copy = runtime.instructions.find((instruction) => instruction.op === "COPY")?.args.split(/\s+/) ?? [];
  expect(copy[1]).toBe(built);
  const binary = join(root, built ?? "missing");
  const version = Bun.spawn([binary, "--version"], { stdout: "pipe", stderr: "pipe", cwd: root });
  const [out, code] = await Promise.all([new Response(version.stdout).text(), version.exited]);
  expect(code).toBe(0);
  expect(out).toMatch(/^spar \S+/);
}, 120_000);
