/**
 * The anchors of a Markdown page as GitHub makes them: one per heading (duplicates numbered) and
 * one per `<a id>` tag. Shared by the docs checks (links, citations in the code).
 */

/** GitHub's heading anchor: formatting dropped, lowercase, punctuation removed, spaces to hyphens. */
export function headingSlug(heading: string): string {
  const text = heading
    .replace(/`([^`]*)`/g, "$1")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "");
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

/** Every anchor a Markdown page offers: its headings (duplicates numbered) and `<a id>` tags. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutCode = markdown.replace(/^```[\s\S]*?^```/gm, "");
  for (const match of withoutCode.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = headingSlug(match[1] ?? "");
    const count = seen.get(slug) ?? 0;
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
    seen.set(slug, count + 1);
  }
  for (const match of markdown.matchAll(/<a (?:id|name)="([^"]+)"/g)) anchors.add(match[1] ?? "");
  return anchors;
}
