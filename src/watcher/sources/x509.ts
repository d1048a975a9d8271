/**
 * The certificate parser the expiry detector is given (D384): PEM text → each certificate's
 * notAfter and subject, read by Bun's own X.509 (`node:crypto` X509Certificate), never by hand.
 * Kept outside src/watcher/core so the detector stays pure and testable with a fake parser.
 */
import { X509Certificate } from "node:crypto";
import type { CertificateParser, ParsedCertificate } from "../core/sources/expiry-detector.ts";

const BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

export const parseCertificates: CertificateParser = (pem) => {
  const blocks = pem.match(BLOCK) ?? [];
  if (blocks.length === 0) return { error: "no PEM certificate block" };
  const parsed: ParsedCertificate[] = [];
  try {
    for (const block of blocks) {
      const certificate = new X509Certificate(block);
      parsed.push({ notAfter: Date.parse(certificate.validTo), subject: certificate.subject.split("\n").join(", ") });
    }
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
  return parsed;
};
