/** Throw from a handler to answer with a status and a FastAPI-style `{"detail": …}` body. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
  ) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
    this.name = 'HttpError';
  }
}

/** The 413 of a body over the limit whose size is known before reading it (a Content-Length, an in-process body). */
export function bodyTooLarge(size: number, limit: number): HttpError {
  return new HttpError(413, `request body of ${size} bytes is too large (limit ${limit})`);
}
