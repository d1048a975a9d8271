/**
 * HttpProblem: a SparError that also carries response headers its status needs
 * (WWW-Authenticate on 401, Allow on 405). Lives at the HTTP edge; the core never sees it.
 */
import { SparError, type SparErrorCode } from "../../core/errors.ts";

export class HttpProblem extends SparError {
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: SparErrorCode, message: string, headers: Record<string, string>) {
    super(code, message);
    this.headers = headers;
  }
}
