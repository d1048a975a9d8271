/**
 * redactUrl (src/net/redact-url.ts): userinfo and password query parameters replaced by `***` in
 * URLs and in text quoting them; everything else left as written.
 */
import { expect, test } from "bun:test";
import { redactUrl } from "../../../src/net/redact-url.ts";

test("userinfo of a URL, as text or parsed, is replaced by ***", () => {
  expect(redactUrl("http://user:pw@host.example/path?q=1")).toBe("http://***@host.example/path?q=1");
  expect(redactUrl("https://token@host.example:8443/")).toBe("https://***@host.example:8443/");
  expect(redactUrl("http://:only-password@host.example/")).toBe("http://***@host.example/");
  expect(redactUrl(new URL("http://a%40b:c%3Ad@[::1]:80/x"))).toBe("http://***@[::1]/x");
});

test("a URL without userinfo, and text that is not a URL, come back as written", () => {
  expect(redactUrl("http://host.example")).toBe("http://host.example");
  expect(redactUrl("http://host.example/a@b")).toBe("http://host.example/a@b");
  expect(redactUrl("not a url")).toBe("not a url");
});

test("URLs quoted inside a message are redacted too", () => {
  expect(redactUrl('fetch failed: unable to connect to "http://alice:s3cret@10.0.0.1:8080/x" (ECONNREFUSED)')).toBe(
    'fetch failed: unable to connect to "http://***@10.0.0.1:8080/x" (ECONNREFUSED)',
  );
  expect(redactUrl("two: http://a:b@one.example and https://c@two.example/")).toBe(
    "two: http://***@one.example and https://***@two.example/",
  );
  expect(redactUrl("mail me at bob@example.com")).toBe("mail me at bob@example.com");
});

test("a password query parameter (libpq's spelling in a postgres:// URL) is replaced by *** too (D483)", () => {
  expect(redactUrl("postgres://db.example:5432/spar?password=hunter2&sslmode=require")).toBe(
    "postgres://db.example:5432/spar?password=***&sslmode=require",
  );
  expect(redactUrl("postgresql://spar:pw@db.example/spar?sslmode=verify-full&sslpassword=k3y")).toBe(
    "postgresql://***@db.example/spar?sslmode=verify-full&sslpassword=***",
  );
  expect(redactUrl("cannot open session store postgres://db.example/spar?PASSWORD=hunter2 (refused)")).toBe(
    "cannot open session store postgres://db.example/spar?PASSWORD=*** (refused)",
  );
  expect(redactUrl("postgres://db.example/spar?sslmode=require")).toBe("postgres://db.example/spar?sslmode=require");
  // Redacting twice (a URL shown redacted, then the logger's pass over the line) changes nothing.
  const line = "listening (store postgres postgres://***@db.example/spar?password=***, 2 turn workers)";
  expect(redactUrl(line)).toBe(line);
});
