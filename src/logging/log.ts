/**
 * Structured logs on request (docs/observing.md, "Structured logs"). A process logs in one of two formats:
 *
 * - `text` (the default): exactly what tsgym always printed. Nothing here runs per request in that mode: callers
 *   test `jsonLogs()` (a module variable) before they build any event.
 * - `json`: every line the process writes to stdout or stderr is one JSON object with `time` (ISO 8601), `level`,
 *   `service` and `msg`, plus the event's fields. Events are written whole by `logEvent`; every other line (a
 *   library's warning, a progress line, a stack trace) is caught by the stdio wrapper `installJsonStdio` puts in
 *   place and becomes the `msg` of an object of its own, so no plain line is left for a log shipper to trip on.
 *
 * The format comes from `--log-format` / the top-level `log_format` key in the commands that start servers or
 * collect, and reaches the processes they spawn through `TSGYM_LOG_FORMAT`. Fields are chosen by the callers:
 * indices, names, classes, statuses, durations and ids only, never a header, a body, a secret or a dataset answer.
 */
import { ConfigError } from '../errors.js';

export type LogFormat = 'text' | 'json';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, string | number | boolean | undefined>;

/** The variable a supervisor sets for the servers it spawns (and a server reads at start). */
export const LOG_FORMAT_ENV = 'TSGYM_LOG_FORMAT';
const FORMATS: readonly LogFormat[] = ['text', 'json'];

let json = false;
let installedFor: string | undefined;
let rawOut: (line: string) => void = (line) => void process.stdout.write(line);

/** True in json mode: the one check a hot path makes before it builds an event. */
export function jsonLogs(): boolean {
  return json;
}

/**
 * The format a value names, or a config error naming where it came from (`source`: the flag and key, or the
 * variable) and the allowed values. Unset (undefined, null, '') is text.
 */
export function parseLogFormat(value: unknown, source: string): LogFormat {
  if (value === undefined || value === null || value === '') return 'text';
  if (typeof value === 'string' && (FORMATS as readonly string[]).includes(value.trim().toLowerCase())) {
    return value.trim().toLowerCase() as LogFormat;
  }
  throw new ConfigError(
    `${source} must be one of ${FORMATS.join(' or ')}, got ${JSON.stringify(value)}. ` +
      'text (the default) prints the usual human-readable lines; json prints one JSON object per line ' +
      '(time, level, service, msg, and trace_id and the rollout keys on per-rollout events), for jq or a log shipper.',
    'GYM_CONFIG_LOG_FORMAT',
  );
}

/**
 * A command's choice (`--log-format` / `log_format`): validated, remembered in `TSGYM_LOG_FORMAT` so every server
 * it spawns logs the same way, and, for json, put in place for this process under `service`. Without the key, a
 * `TSGYM_LOG_FORMAT` already in the environment decides.
 */
export function applyLogFormat(config: Record<string, unknown>, service: string): LogFormat {
  const fromConfig = config.log_format !== undefined && config.log_format !== null;
  const format = fromConfig
    ? parseLogFormat(config.log_format, "--log-format (config key 'log_format')")
    : parseLogFormat(process.env[LOG_FORMAT_ENV], `The environment variable ${LOG_FORMAT_ENV}`);
  process.env[LOG_FORMAT_ENV] = format;
  if (format === 'json') installJsonStdio(service);
  return format;
}

/** A server process at start: the format its supervisor passed down (a bad value is a config error naming it). */
export function logFormatFromEnv(service: string, env: NodeJS.ProcessEnv = process.env): LogFormat {
  const format = parseLogFormat(env[LOG_FORMAT_ENV], `The environment variable ${LOG_FORMAT_ENV}`);
  if (format === 'json') installJsonStdio(service);
  return format;
}

/**
 * One event as a JSON line (no newline). Undefined fields are left out; a field cannot replace `time`, `level`,
 * `service` or `msg`.
 */
export function eventLine(service: string, level: LogLevel, msg: string, fields?: LogFields): string {
  const time = new Date().toISOString();
  // The four keys lead every line and no field can replace them.
  return JSON.stringify(Object.assign({ time, level, service }, fields, { time, level, service, msg }));
}

/** Write one event (json mode only; a no-op in text mode, so a caller may skip its own check on cold paths). */
export function logEvent(service: string, level: LogLevel, msg: string, fields?: LogFields): void {
  if (json) rawOut(`${eventLine(service, level, msg, fields)}\n`);
}

/**
 * A block of text (an error paragraph with a server's last lines) as one event of this process's service, its lines
 * kept together in `msg`. False in text mode: the caller prints it as always.
 */
export function logBlock(level: LogLevel, text: string): boolean {
  if (!json) return false;
  rawOut(`${eventLine(installedFor ?? 'tsgym', level, text.replace(/\n+$/, ''))}\n`);
  return true;
}

/**
 * A line as an event: one of tsgym's events (a JSON object with a string `service`) is passed through as is, any
 * other line becomes the `msg` of an event of `service` (its level read from the line, see `levelOf`).
 * `msg` is the event's message either way, for a supervisor's tail of a server's last lines.
 */
export function toEvent(service: string, line: string, stream: 'stdout' | 'stderr'): { line: string; msg: string } {
  if (line.startsWith('{')) {
    try {
      const value: unknown = JSON.parse(line);
      if (typeof value === 'object' && value !== null && typeof (value as { service?: unknown }).service === 'string') {
        const msg = (value as { msg?: unknown }).msg;
        return { line, msg: typeof msg === 'string' ? msg : line };
      }
    } catch {
      // not JSON: wrapped below
    }
  }
  const text = line.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').replace(/\r/g, '');
  return { line: eventLine(service, levelOf(text, stream), text, { stream }), msg: text };
}

/** A plain line's level: what it says it is; otherwise info on stdout, and warn on stderr (where notes go too). */
function levelOf(text: string, stream: 'stdout' | 'stderr'): LogLevel {
  if (/^\s*(\[[^\]]*\]\s*)?(error|fatal)\b|\bfailed: |\bfatal /i.test(text)) return 'error';
  if (/^\s*(\[[^\]]*\]\s*)?warn/i.test(text)) return 'warn';
  return stream === 'stdout' ? 'info' : 'warn';
}

/** A line longer than this without a newline is written as an event of its own (memory stays bounded). */
const MAX_PENDING = 1 << 20;

/**
 * json mode for this process: stdout and stderr are replaced by line-buffered writers that pass tsgym's events
 * through and wrap every other line. Installed once; the service of wrapped lines is the first caller's.
 */
export function installJsonStdio(service: string): void {
  json = true;
  if (installedFor !== undefined) return;
  installedFor = service;
  const out = wrapStream(process.stdout, 'stdout');
  wrapStream(process.stderr, 'stderr');
  rawOut = out;
}

function wrapStream(stream: NodeJS.WriteStream, name: 'stdout' | 'stderr'): (line: string) => void {
  const original = stream.write.bind(stream) as (chunk: string, cb?: (err?: Error | null) => void) => boolean;
  let pending = '';
  const emit = (line: string): void => void original(`${toEvent(installedFor ?? 'tsgym', line, name).line}\n`);
  const write = (chunk: unknown, encoding?: unknown, cb?: unknown): boolean => {
    const done = typeof encoding === 'function' ? encoding : cb;
    const text =
      typeof chunk === 'string'
        ? chunk
        : Buffer.from(chunk as Uint8Array).toString(
            typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8',
          );
    pending += text;
    let newline = pending.indexOf('\n');
    while (newline >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      if (line.trim() !== '') emit(line);
      newline = pending.indexOf('\n');
    }
    if (pending.length > MAX_PENDING) {
      emit(pending);
      pending = '';
    }
    if (typeof done === 'function') queueMicrotask(() => (done as () => void)());
    return true;
  };
  stream.write = write;
  // A last line without its newline is still written, as an event, when the process ends.
  process.once('exit', () => {
    if (pending.trim() !== '') emit(pending);
    pending = '';
  });
  return (line) => void original(line);
}
