/**
 * Certificates for the TLS and mTLS tests and the mTLS bench, made with openssl in a directory:
 * a self-signed CA, and certificates it signs (the server's with a localhost SAN). One day of
 * validity; files are `<name>.key`, `<name>.crt` in the directory.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export class TestCertificates {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
    writeFileSync(join(dir, "san.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  }

  /** A self-signed CA: `<name>.key` and `<name>.crt`. */
  ca(name: string, subject: string): this {
    this.#openssl(
      ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.crt`].concat([
        "-days",
        "1",
        "-subj",
        subject,
      ]),
    );
    return this;
  }

  /** A certificate `ca` signs for `subject`; `server` adds the localhost SAN. */
  signed(name: string, subject: string, ca: string, options: { server?: boolean } = {}): this {
    this.#openssl([
      "req",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.csr`,
      "-subj",
      subject,
    ]);
    this.#openssl([
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      `${ca}.crt`,
      "-CAkey",
      `${ca}.key`,
      "-CAcreateserial",
      "-out",
      `${name}.crt`,
      "-days",
      "1",
      ...(options.server ? ["-extfile", "san.ext"] : []),
    ]);
    return this;
  }

  path(file: string): string {
    return join(this.dir, file);
  }

  #openssl(args: string[]): void {
    const result = Bun.spawnSync(["openssl", ...args], { cwd: this.dir, stderr: "pipe" });
    if (result.exitCode !== 0) throw new Error(`openssl ${args.join(" ")}: ${result.stderr.toString()}`);
  }
}
