/**
 * Typed errors. Every error tsgym raises on purpose carries a stable `code` and one of three classes:
 *
 * - `config`    — the user's configuration, command line or input file is wrong. Fail fast, print one
 *                 paragraph (`Error: …`), exit 1 (or 2 for an unknown flag). Never a stack trace.
 * - `retryable` — a rollout failed for a reason that may pass (transport, timeout, 5xx). It becomes a
 *                 failure row that `+resume_from_cache=true` re-dispatches, up to the attempt cap.
 * - `terminal`  — a rollout failed deterministically (the service broke the contract, the row is
 *                 invalid). It becomes a failure row with `_ng_failure_terminal: true`; never retried.
 *
 * The failure sidecar and resume read `errorClass`, never the message text (decision D3).
 */
export type ErrorClass = 'config' | 'retryable' | 'terminal';

export interface GymErrorOptions {
  cause?: unknown;
}

export class GymError extends Error {
  readonly code: string;
  readonly errorClass: ErrorClass;

  constructor(code: string, errorClass: ErrorClass, message: string, options: GymErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.errorClass = errorClass;
  }
}

/** A mistake in config files, overrides, env.yaml or an input file. Exit code 1. */
export class ConfigError extends GymError {
  constructor(message: string, code = 'GYM_CONFIG', options: GymErrorOptions = {}) {
    super(code, 'config', message, options);
  }
}

/** A command-line usage mistake (unknown flag, bad flag value). Exit code 2, like argparse. */
export class UsageError extends ConfigError {
  constructor(message: string, code = 'GYM_USAGE') {
    super(message, code);
  }
}

/** A rollout failure that may pass on a later attempt. */
export class RetryableRolloutError extends GymError {
  constructor(code: string, message: string, options: GymErrorOptions = {}) {
    super(code, 'retryable', message, options);
  }
}

/** A rollout failure that will fail the same way again: never retried. */
export class TerminalRolloutError extends GymError {
  constructor(code: string, message: string, options: GymErrorOptions = {}) {
    super(code, 'terminal', message, options);
  }
}

export function isGymError(err: unknown): err is GymError {
  return err instanceof GymError;
}

/** One-line description of any thrown value, `<Type>: <message>`, as the reference prints it. */
export function describeError(err: unknown): string {
  if (err instanceof Error) {
    const type = err instanceof GymError ? err.code : err.name || 'Error';
    return `${type}: ${err.message}`;
  }
  return `Error: ${String(err)}`;
}
