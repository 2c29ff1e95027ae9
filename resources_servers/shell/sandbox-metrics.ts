/**
 * The shell environment's gauge on `GET /metrics`: `gym_shell_sandboxes`, the sandboxes alive in this process (one
 * per seeded session, until `/verify`, idle expiry or shutdown destroys it), read from the sandbox hosts when
 * Prometheus scrapes. A process may open more than one host (tests do), so the gauge is their sum.
 */
import { gaugeReadAtScrape } from '../../src/prometheus/metrics.js';

interface Counted {
  readonly live: number;
}

const hosts = new Set<Counted>();
let registered = false;

/** Counts `host`'s sandboxes in the gauge until the returned function is called (at the host's close). */
export function countSandboxes(host: Counted): () => void {
  if (!registered) {
    gaugeReadAtScrape(
      'gym_shell_sandboxes',
      'Sandboxes the shell environment holds (one per seeded session until verify, expiry or shutdown).',
      () => [...hosts].reduce((sum, each) => sum + each.live, 0),
    );
    registered = true;
  }
  hosts.add(host);
  return () => hosts.delete(host);
}
