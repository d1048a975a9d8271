import { expect, test } from "bun:test";
import { SparError } from "../../../../src/core/errors.ts";
import { jsonRpcError } from "../../../../src/surfaces/http/json-rpc-errors.ts";
import { routeSkill, skillSelector } from "../../../../src/svc/a2a/skill-route.ts";
import type { Workload } from "../../../../src/svc/workload/workload.ts";

const workload = (name: string) => ({ name }) as Workload;

function refusal(run: () => unknown): { code: number; message: string } {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(SparError);
    return jsonRpcError(error);
  }
  throw new Error("not refused");
}

test("a fresh send without a selector goes to the single exposed skill", () => {
  expect(routeSkill([workload("gated")], undefined).name).toBe("gated");
});

test("a fresh send without a selector while several skills are exposed is -32004, naming them", () => {
  const refused = refusal(() => routeSkill([workload("a"), workload("b")], undefined));
  expect(refused.code).toBe(-32004);
  expect(refused.message).toContain("a, b");
});

test("metadata.skill selects, from the message first, then the params; an unknown one is -32602", () => {
  expect(skillSelector({ skill: "b" }, { skill: "a" })).toBe("b");
  expect(skillSelector(undefined, { skill: "a" })).toBe("a");
  expect(routeSkill([workload("a"), workload("b")], "b").name).toBe("b");
  expect(refusal(() => routeSkill([workload("a")], "z")).code).toBe(-32602);
});
