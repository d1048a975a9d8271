/**
 * The postgres store's connection rules (src/store/postgres/postgres-connection.ts): the pool's
 * options never carry a `tls` that would override the URL's sslmode (D516); a URL's TLS parameters
 * are checked before anything connects, naming the parameter and never the URL; a TLS failure at
 * open is named as one with the URL's mode (D517), any other failure left as the driver said it.
 */
import { expect, test } from "bun:test";
import {
  describeConnectFailure,
  isTlsFailure,
  sqlOptions,
  tlsParameterProblem,
} from "../../../src/store/postgres/postgres-connection.ts";
import { openFailed } from "../../../src/store/postgres/postgres-errors.ts";

const URL_WITH_SECRET = "postgres://spar:hunter2@db.example:5432/spar";

test("the pool's options: size and timeouts, and no tls of their own", () => {
  const options = sqlOptions({ maxConnections: 7, connectTimeoutSeconds: 3 });
  expect(options).toEqual({ max: 7, connectionTimeout: 3, idleTimeout: 60 });
  expect("tls" in options || "ssl" in options).toBe(false);
});

test("TLS parameters: the six modes, files given, a client certificate with its key", () => {
  for (const mode of ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"])
    expect(tlsParameterProblem(`${URL_WITH_SECRET}?sslmode=${mode}`)).toBeUndefined();
  expect(tlsParameterProblem(URL_WITH_SECRET)).toBeUndefined();
  expect(
    tlsParameterProblem(`${URL_WITH_SECRET}?sslmode=verify-full&sslrootcert=/ca.pem&sslcert=/c.pem&sslkey=/c.key`),
  ).toBeUndefined();
  expect(tlsParameterProblem(`${URL_WITH_SECRET}?sslmode=VERIFY`)).toBe(
    "sslmode=VERIFY is not a TLS mode: use one of disable, allow, prefer, require, verify-ca, verify-full",
  );
  expect(tlsParameterProblem(`${URL_WITH_SECRET}?sslmode=`)).toContain("sslmode= is empty");
  expect(tlsParameterProblem(`${URL_WITH_SECRET}?sslkey=/c.key`)).toBe(
    "sslcert and sslkey go together: a client certificate needs its key",
  );
  expect(tlsParameterProblem(`${URL_WITH_SECRET}?sslmode=bad&password=hunter2`)).not.toContain("hunter2");
});

test("a TLS failure names TLS and the URL's mode; another failure is the driver's message", () => {
  const unverified = Object.assign(new Error("unable to verify the first certificate"), {
    code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  });
  const plain = Object.assign(new Error('no pg_hba.conf entry for host "10.0.0.1", no encryption'), {
    code: "ERR_POSTGRES_SERVER_ERROR",
  });
  const refused = Object.assign(new Error("Connection refused"), { code: "ERR_POSTGRES_CONNECTION_CLOSED" });
  expect([unverified, plain, refused].map(isTlsFailure)).toEqual([true, true, false]);
  expect(describeConnectFailure("postgres://***@db/spar?sslmode=verify-full", unverified)).toBe(
    "TLS failed (sslmode=verify-full): unable to verify the first certificate; check the server's certificate against sslrootcert, and whether the server requires TLS",
  );
  expect(describeConnectFailure("postgres://db/spar", plain)).toStartWith("TLS failed (no sslmode in the URL): ");
  expect(describeConnectFailure("postgres://db/spar", refused)).toBe("Connection refused");
  // At open, the message carries the redacted URL only.
  const error = openFailed("postgres://***@db.example:5432/spar?sslmode=require", unverified);
  expect(error.message).toStartWith(
    "cannot open session store postgres://***@db.example:5432/spar?sslmode=require: TLS failed (sslmode=require)",
  );
  expect(error.message).not.toContain("hunter2");
});
