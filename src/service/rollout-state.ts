import { randomBytes } from 'node:crypto';

/**
 * Per-rollout state behind a cookie. Gym echoes a service's cookies on every later call of the same rollout and
 * starts every rollout (retries included) without them, so "no cookie" means "first call of a new rollout".
 * The cookie value is a random id: unguessable, so one rollout cannot reach another's state.
 *
 * State lives in memory. Entries idle longer than `idleMs` are dropped, and at most `maxRollouts` are kept
 * (least recently used first out), so a long collection run cannot grow the service without bound. A call
 * carrying an id the store no longer knows (expired, or the service restarted) starts fresh state under a new id.
 */
export interface RolloutStateOptions {
  idleMs?: number;
  maxRollouts?: number;
}

export interface RolloutEntry {
  id: string;
  state: Record<string, unknown>;
  /** 1 on the first call of the rollout. */
  step: number;
  /** True when this call created the entry (the caller must then set the cookie). */
  isNew: boolean;
}

interface Stored {
  state: Record<string, unknown>;
  steps: number;
  lastSeen: number;
}

export class RolloutStateStore {
  private readonly entries = new Map<string, Stored>();
  private readonly idleMs: number;
  private readonly maxRollouts: number;

  constructor(options: RolloutStateOptions = {}) {
    this.idleMs = options.idleMs ?? 2 * 60 * 60 * 1000;
    this.maxRollouts = options.maxRollouts ?? 10_000;
  }

  /** The rollout for a call that carried `cookieValue` (undefined when it carried none). */
  enter(cookieValue: string | undefined, now = Date.now()): RolloutEntry {
    this.evictIdle(now);
    const known = cookieValue === undefined ? undefined : this.entries.get(cookieValue);
    if (cookieValue !== undefined && known) {
      // Re-insert so Map order stays least-recently-used first.
      this.entries.delete(cookieValue);
      known.steps += 1;
      known.lastSeen = now;
      this.entries.set(cookieValue, known);
      return { id: cookieValue, state: known.state, step: known.steps, isNew: false };
    }
    for (const oldest of this.entries.keys()) {
      if (this.entries.size < this.maxRollouts) break;
      this.entries.delete(oldest);
    }
    const id = randomBytes(16).toString('hex');
    const stored: Stored = { state: {}, steps: 1, lastSeen: now };
    this.entries.set(id, stored);
    return { id, state: stored.state, step: 1, isNew: true };
  }

  get size(): number {
    return this.entries.size;
  }

  private evictIdle(now: number): void {
    for (const [id, entry] of this.entries) {
      if (now - entry.lastSeen <= this.idleMs) break; // Map order is least-recently-used first: the rest are fresher.
      this.entries.delete(id);
    }
  }
}
