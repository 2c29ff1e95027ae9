/**
 * The two ways the sandbox machinery itself fails, kept apart because callers treat them differently: a machine that
 * cannot sandbox at all is a configuration problem found at start-up, while a sandbox that breaks mid-session is
 * infrastructure trouble worth retrying, never a command's failure (and so never a reward of 0).
 */
import { GymError } from '../../../src/errors.js';

/** This machine cannot create the sandboxes (missing tool, not root, namespaces refused): the environment refuses to start. */
export class SandboxUnavailableError extends GymError {
  constructor(message: string) {
    super('GYM_SANDBOX_UNAVAILABLE', 'config', message);
  }
}

/** A failure of the sandbox machinery itself (not of the command): infrastructure, never a reward of 0. */
export class SandboxError extends GymError {
  constructor(message: string) {
    super('GYM_SANDBOX_FAILED', 'retryable', message);
  }
}
