/**
 * How the postgres store meets a failure (postgres-errors.ts, D500), on the error shapes Bun.sql
 * produces (`code` ERR_POSTGRES_..., the server's SQLSTATE in `errno`): connection failures may run
 * again on a fresh connection (and at COMMIT are in doubt), server refusals fail the batch with a
 * 503 message naming the reason, races are retried, anything else fails its op alone.
 */
import { describe, expect, test } from "bun:test";
import { SparError } from "../../../src/core/errors.ts";
import {
  commitInDoubt,
  failureKind,
  isConnectionLevel,
  isRetryable,
  isStoreLevel,
  opFailed,
  writeRefused,
} from "../../../src/store/postgres/postgres-errors.ts";

/** A server error as Bun.sql reports it. */
function serverError(sqlstate: string, message: string): Error {
  return Object.assign(new Error(message), { code: "ERR_POSTGRES_SERVER_ERROR", errno: sqlstate });
}

/** A client-side failure with no SQLSTATE (the socket closed, the connect failed). */
function bunError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe("failureKind", () => {
  test.each([
    ["57P01", "admin shutdown (fast stop, terminated backend)"],
    ["57P02", "crash shutdown"],
    ["57P03", "cannot connect now (starting up)"],
    ["53300", "too many connections"],
    ["08006", "connection failure"],
    ["08001", "cannot establish connection"],
  ])("SQLSTATE %s (%s) is the connection's: retried on a fresh one, in doubt at COMMIT", (state) => {
    const error = serverError(state, "x");
    expect(failureKind(error)).toBe("connection");
    expect(isConnectionLevel(error)).toBe(true);
    expect(isStoreLevel(error)).toBe(true);
  });

  test.each([
    ["25006", "read-only"],
    ["53100", "disk full"],
    ["53200", "out of memory"],
    ["57014", "query canceled"],
    ["58030", "io error"],
    ["28P01", "password refused"],
    ["3D000", "no such database"],
  ])("SQLSTATE %s (%s) is a refusal of the store as a whole, not retried", (state) => {
    const error = serverError(state, "x");
    expect(failureKind(error)).toBe("refused");
    expect(isStoreLevel(error)).toBe(true);
    expect(isConnectionLevel(error)).toBe(false);
  });

  test("Bun's own failures without a SQLSTATE are the connection's; a plain Error is a statement's", () => {
    for (const code of [
      "ERR_POSTGRES_CONNECTION_CLOSED",
      "ERR_POSTGRES_CONNECTION_TIMEOUT",
      "ERR_POSTGRES_IDLE_TIMEOUT",
    ])
      expect(failureKind(bunError(code, "closed"))).toBe("connection");
    expect(failureKind(new Error("bug"))).toBe("statement");
    expect(failureKind(bunError("ERR_POSTGRES_SERVER_ERROR", "no errno"))).toBe("statement");
    expect(failureKind("not an error")).toBe("statement");
  });

  test("deadlock and serialization failure are retried; a constraint violation fails its op alone", () => {
    expect(isRetryable(serverError("40P01", "deadlock detected"))).toBe(true);
    expect(isRetryable(serverError("40001", "could not serialize access"))).toBe(true);
    const unique = serverError("23505", "duplicate key value");
    expect(failureKind(unique)).toBe("statement");
    expect(isStoreLevel(unique)).toBe(false);
    expect(opFailed(unique).code).toBe("internal");
  });
});

describe("what callers are told", () => {
  test("a read-only database and a full disk are named in the 503's message, with the SQLSTATE", () => {
    const readOnly = writeRefused(serverError("25006", "cannot execute INSERT in a read-only transaction"));
    expect(readOnly.code).toBe("unavailable");
    expect(readOnly.message).toBe(
      "session store refused the write: the database is read-only (SQLSTATE 25006: cannot execute INSERT in a read-only transaction)",
    );
    expect(readOnly.details.sqlstate).toBe("25006");
    const full = writeRefused(serverError("53100", "could not extend file"));
    expect(full.message).toContain("the database server is out of disk space (SQLSTATE 53100: could not extend file)");
  });

  test("other refusals carry the server's message as it is; a SparError passes through", () => {
    expect(writeRefused(serverError("57P01", "terminating connection")).message).toBe(
      "session store refused the write: terminating connection",
    );
    const already = new SparError("unavailable", "in use by another spar daemon");
    expect(writeRefused(already)).toBe(already);
  });

  test("a commit in doubt says the write may have been applied and marks the body in_doubt", () => {
    const error = commitInDoubt(bunError("ERR_POSTGRES_CONNECTION_CLOSED", "Connection closed"), "1234", 30_000);
    expect(error.code).toBe("unavailable");
    expect(error.message).toContain("commit in doubt");
    expect(error.message).toContain("within 30 s whether transaction 1234 committed; the write may have been applied");
    expect(error.details.in_doubt).toBe(true);
  });
});
