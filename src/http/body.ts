/** Reading a request's body over HTTP, refusing one over the limit without buffering the rest. */
import type http from 'node:http';
import { bodyTooLarge, HttpError } from './http-error.js';

export function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    return Promise.reject(bodyTooLarge(declared, limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        reject(new HttpError(413, `request body is too large (limit ${limit} bytes)`));
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    req.once('error', reject);
  });
}
