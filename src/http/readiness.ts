import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ReadinessOptions {
  /** Pause between probes. Start-up should take well under 2 s, so this is short. */
  intervalMs?: number;
  /** Deadline of one probe (a server that accepts but never answers must not stall the loop). */
  probeTimeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * Resolve once `GET <url>/` gets any HTTP answer: the status code is not judged, as in the reference (Q13), since a
 * server that answers at all is listening. Polls until `signal` aborts; the caller owns the overall deadline.
 */
export async function waitUntilAnswering(url: string, options: ReadinessOptions = {}): Promise<boolean> {
  const { intervalMs = 50, probeTimeoutMs = 1_000, signal } = options;
  while (!signal?.aborted) {
    if (await answers(url, probeTimeoutMs)) return true;
    await sleep(intervalMs, undefined, signal ? { signal } : undefined).catch(() => undefined);
  }
  return false;
}

/**
 * One bounded probe: true when `GET <url>/` got any HTTP answer (its headers; the body is not read). It uses
 * `node:http` on a fresh connection rather than the undici client: the supervisor behind `gym env start` needs
 * nothing else from undici, and loading it (and compiling its WebAssembly HTTP parser) added ~35 MiB to that
 * process's peak memory. `node:http` reads no proxy variables either.
 */
export function answers(url: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    let request: http.ClientRequest;
    try {
      request = http.get(`${url}/`, { agent: false }, (response) => {
        clearTimeout(deadline);
        resolve(true);
        response.destroy();
      });
    } catch {
      resolve(false); // an unusable URL never answers
      return;
    }
    const deadline = setTimeout(() => request.destroy(), timeoutMs);
    request.once('error', () => {
      clearTimeout(deadline);
      resolve(false);
    });
  });
}
