import { delay, request } from '../http/client.js';

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
    await delay(intervalMs, signal);
  }
  return false;
}

/** One bounded probe: true when `GET <url>/` got any HTTP answer. */
export async function answers(url: string, timeoutMs: number): Promise<boolean> {
  try {
    await request(`${url}/`, { timeoutMs, maxBodyBytes: 1024 * 1024 });
    return true;
  } catch {
    return false;
  }
}
