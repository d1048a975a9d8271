/**
 * The contract lives in the repository: no comment in src/ or workers/ and no page in docs/ cites
 * a document a maintainer cannot open, and every `docs/<page>.md#<section>` the code cites
 * resolves to a heading of that page. The scanner and its phrase list: test/support/outside-citations.ts.
 */
import { describe, expect, test } from "bun:test";
import {
  commentText,
  findOutsideCitations,
  outsideCitations,
  unresolvedDocCitations,
} from "../support/outside-citations.ts";

describe("the citation checker", () => {
  test("finds the phrases that cite a document outside the repository", () => {
    expect(outsideCitations("the spec's order")).toEqual(["a spec (the spec)"]);
    expect(outsideCitations("(reference 1.7, graph dispatch)")).toEqual(["the reference notes ((reference)"]);
    expect(outsideCitations("(spec: Limits)")).toEqual(["a spec (spec:)"]);
    expect(outsideCitations("kill -9 at each point (RELIABILITY.md)")).toEqual(["the design notes (RELIABILITY.md)"]);
    expect(outsideCitations("as the original daemon sends it")).toEqual(["the original (the original)"]);
    expect(outsideCitations("as the original daemon sends it", true)).toEqual([]);
  });

  test("leaves alone what cites nothing: tool specs, a spec set, the docs and decisions", () => {
    for (const text of [
      "the specs the model is offered",
      "the composed spec set",
      "(model spec v2, D296)",
      "docs/svc.md#the-write-gate; D236",
      "the specialist's result",
      "user_agent.original",
    ])
      expect(outsideCitations(text)).toEqual([]);
  });

  test("reads comments, not code", () => {
    expect(commentText("export function shownDefault(spec: FlagSpec): string {")).toBe("");
    expect(commentText(" * the spec's order")).toBe(" * the spec's order");
    expect(commentText("  const x = 1; // the spec")).toBe(" // the spec");
    expect(commentText('  const url = "http://example.com";')).toBe("");
  });
});

describe("src/, workers/ and docs/", () => {
  test("cite no document outside the repository (cite docs/<page>.md#<section> or a decision)", () => {
    expect(findOutsideCitations()).toEqual([]);
  });

  test("every docs/<page>.md#<section> a comment cites is a page with that heading", () => {
    expect(unresolvedDocCitations()).toEqual([]);
  });
});
