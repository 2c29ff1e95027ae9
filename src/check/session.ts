/**
 * What the parts of one `gym agent check` run share: the client that calls the service, the ledger of what was
 * found, and the limits the run was given. Both ways of probing take a session, so neither builds its own.
 */
import type { ServiceAuth } from '../http/service-auth.js';
import { CheckLedger } from './ledger.js';
import { CheckClient } from './service-client.js';

interface CheckLimits {
  /** Bound on each call. */
  timeoutMs: number;
  /** Calls per conversation before it counts as never finishing. */
  maxSteps: number;
  /** A call slower than this is a warning. */
  slowCallMs: number;
  /** Judge answers completed from their request, as `fill_echo_fields: true` has the remote agent do. */
  fillEchoFields: boolean;
}

export interface CheckSession extends CheckLimits {
  client: CheckClient;
  ledger: CheckLedger;
}

export function openSession(baseUrl: string, limits: CheckLimits, auth: ServiceAuth): CheckSession {
  const ledger = new CheckLedger(auth.secrets, limits.fillEchoFields);
  return { ...limits, ledger, client: new CheckClient(baseUrl, { timeoutMs: limits.timeoutMs, auth }, ledger) };
}
