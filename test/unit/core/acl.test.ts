import { expect, test } from "bun:test";
import { type SessionAcl, allows, canList, mergeAcl } from "../../../src/core/acl.ts";

const acl: SessionAcl = { owner: "olga", viewers: ["vic"], contributors: ["cora"] };
const who = (identity: string, admin = false) => ({ identity, admin });

test("the spec's matrix: owner, contributor, viewer, admin, stranger", () => {
  const rows: Array<[string, boolean, [boolean, boolean, boolean]]> = [
    ["olga", false, [true, true, true]],
    ["cora", false, [true, true, false]],
    ["vic", false, [true, false, false]],
    ["root", true, [true, true, true]],
    ["mallory", false, [false, false, false]],
  ];
  for (const [identity, admin, [read, write, administer]] of rows) {
    expect([
      allows(acl, who(identity, admin), "read"),
      allows(acl, who(identity, admin), "write"),
      allows(acl, who(identity, admin), "admin"),
    ]).toEqual([read, write, administer]);
    expect(canList(acl, who(identity, admin))).toBe(read);
  }
});

test("matching is exact", () => {
  expect(allows(acl, who("Olga"), "read")).toBe(false);
  expect(allows(acl, who("vic "), "read")).toBe(false);
});

test("PATCH merge: omitted lists unchanged, [] clears, owner only repeated", () => {
  expect(mergeAcl(acl, { viewers: [] })).toEqual({
    ok: true,
    value: { owner: "olga", viewers: [], contributors: ["cora"] },
  });
  expect(mergeAcl(acl, { contributors: ["x"], owner: "olga" })).toEqual({
    ok: true,
    value: { owner: "olga", viewers: ["vic"], contributors: ["x"] },
  });
  expect(mergeAcl(acl, { owner: "" }).ok).toBe(false);
  expect(mergeAcl(acl, { owner: "cora" }).ok).toBe(false);
});
