/**
 * The docs stand alone: every relative link in README.md and every docs/ page (docs/decisions/
 * included) resolves to a file in the repository (and a `#fragment` into a Markdown file to one of
 * its headings or anchors, so a link to a decision entry must name the area file that holds it),
 * nothing points outside the repository, and the README stays a short front page.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { anchorsOf, headingSlug } from "../support/markdown-anchors.ts";

const REPO_ROOT = resolve(import.meta.dir, "..", "..");

/** The pages checked: the README and every Markdown file under docs/ (the decision areas in docs/decisions/ included). */
function pages(): string[] {
  const docs = [...new Bun.Glob("docs/**/*.md").scanSync({ cwd: REPO_ROOT, onlyFiles: true })];
  return ["README.md", ...docs.sort()];
}

/** Markdown without fenced code blocks and inline code, where brackets are not links. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
}

/** Targets of inline links and images, `[text](target)`, external ones (a URL scheme) left out. */
export function relativeLinks(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1] ?? "")
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** The links of one page that do not resolve, as `page: target (why)`. */
export function brokenLinks(page: string, markdown: string, root: string = REPO_ROOT): string[] {
  const broken: string[] = [];
  for (const target of relativeLinks(markdown)) {
    const [path = "", fragment] = target.split("#", 2);
    const file = path === "" ? join(root, page) : resolve(root, dirname(page), decodeURI(path));
    const inside = relative(root, file);
    if (inside.startsWith("..") || inside.startsWith(sep)) {
      broken.push(`${page}: ${target} (outside the repository)`);
      continue;
    }
    if (!existsSync(file)) {
      broken.push(`${page}: ${target} (no such file)`);
      continue;
    }
    if (fragment !== undefined && file.endsWith(".md") && !anchorsOf(readFileSync(file, "utf8")).has(fragment))
      broken.push(`${page}: ${target} (no such heading or anchor)`);
  }
  return broken;
}

describe("the link checker", () => {
  test("slugs headings as GitHub does", () => {
    expect(headingSlug("`spar agent`")).toBe("spar-agent");
    expect(headingSlug("Tool-server catalog (mcp.json)")).toBe("tool-server-catalog-mcpjson");
    expect(headingSlug("Outbound URLs (SSRF)")).toBe("outbound-urls-ssrf");
  });

  test("reports a missing file, a missing heading and a path outside the repository", () => {
    const page = "docs/agent.md";
    const markdown = [
      "[ok](configuration.md#every-key) [gone](no-such-page.md) [bad anchor](security.md#no-such-heading)",
      "[out](../../elsewhere.md) [web](https://example.com/x.md) `[code](not-a-link.md)`",
    ].join("\n");
    expect(brokenLinks(page, markdown)).toEqual([
      "docs/agent.md: no-such-page.md (no such file)",
      "docs/agent.md: security.md#no-such-heading (no such heading or anchor)",
      "docs/agent.md: ../../elsewhere.md (outside the repository)",
    ]);
  });

  test("reports a link to a decision entry that is not in the file it names", () => {
    const markdown = "[D150](decisions/store.md#d150) [D1](decisions/store.md#d1) [D99999](decisions.md#d99999)";
    expect(brokenLinks("docs/security.md", markdown)).toEqual([
      "docs/security.md: decisions/store.md#d1 (no such heading or anchor)",
      "docs/security.md: decisions.md#d99999 (no such heading or anchor)",
    ]);
  });
});

describe("README.md and docs/**/*.md", () => {
  test("every relative link resolves to a file in the repository, and every fragment to a heading", () => {
    const checked = pages();
    expect(checked).toContain("docs/architecture.md");
    expect(checked).toContain("docs/decisions/store.md");
    const broken = checked.flatMap((page) => brokenLinks(page, readFileSync(join(REPO_ROOT, page), "utf8")));
    expect(broken).toEqual([]);
  });

  test("name no file outside the repository (the specs and design notes are named, not linked)", () => {
    const outside = pages().filter((page) =>
      /\.\.\/(shared|spec|reference)\b/.test(readFileSync(join(REPO_ROOT, page), "utf8")),
    );
    expect(outside).toEqual([]);
  });

  test("the README stays a front page: under 250 lines, with the two set-up commands CI relies on", () => {
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    expect(readme.split("\n").length).toBeLessThan(250);
    expect(readme).toContain(
      "scripts/spar agent --attach-listen=127.0.0.1:7777 --session-db=.agents/state/sessions.db --model=echo",
    );
    expect(readme).toContain("```sh\nscripts/test\n```");
  });
});
