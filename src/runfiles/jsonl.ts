/**
 * JSONL on disk, streamed: lines are read as raw bytes with their line number and byte offset (so a torn tail
 * can be cut off exactly), and rows are appended as one whole line per `write` (decision D10), so a collector
 * killed at any moment leaves whole lines plus at most one unterminated tail.
 */
import {
  closeSync,
  existsSync,
  ftruncateSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { ConfigError } from '../errors.js';
import { MAX_ENVELOPED_JSON_DEPTH, parseBoundedJson } from '../bounded-json/index.js';

export interface RawLine {
  /** 1-based. */
  lineNo: number;
  /** Byte offset of the line's first byte. */
  start: number;
  /**
   * The line without its `\n` (and without a trailing `\r`). A view into the reader's buffer: valid only until
   * the next line is requested, so decode or copy it first.
   */
  bytes: Buffer;
  /** False only for a last line with no newline after it. */
  terminated: boolean;
}

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const READ_BUFFER_BYTES = 1 << 20;

function withoutCR(bytes: Buffer): Buffer {
  return bytes.length > 0 && bytes[bytes.length - 1] === CARRIAGE_RETURN ? bytes.subarray(0, bytes.length - 1) : bytes;
}

/**
 * The lines of a file, read on demand into one reused buffer (grown only for a line longer than it), so reading
 * a file of any length costs the same memory. `from` resumes at a line boundary (a tailing reader's last offset,
 * with the number of lines before it).
 */
export async function* readRawLines(
  path: string,
  from: { offset: number; lineNo: number } = { offset: 0, lineNo: 0 },
): AsyncGenerator<RawLine> {
  const handle = await open(path, 'r');
  let buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  let start = 0; // first unconsumed byte in `buffer`
  let end = 0; // end of the valid bytes in `buffer`
  let bufferOffset = from.offset; // file offset of buffer[0]
  let lineNo = from.lineNo;
  try {
    for (;;) {
      const valid = buffer.subarray(0, end);
      for (let nl = valid.indexOf(NEWLINE, start); nl >= 0; nl = valid.indexOf(NEWLINE, start)) {
        yield {
          lineNo: ++lineNo,
          start: bufferOffset + start,
          bytes: withoutCR(valid.subarray(start, nl)),
          terminated: true,
        };
        start = nl + 1;
      }
      // Keep the partial last line at the front, then fill the rest of the buffer.
      if (start > 0) {
        buffer.copyWithin(0, start, end);
        bufferOffset += start;
        end -= start;
        start = 0;
      }
      if (end === buffer.length) {
        const grown = Buffer.allocUnsafe(buffer.length * 2);
        buffer.copy(grown, 0, 0, end);
        buffer = grown;
      }
      const { bytesRead } = await handle.read(buffer, end, buffer.length - end, bufferOffset + end);
      if (bytesRead === 0) break;
      end += bytesRead;
    }
    if (end > start)
      yield {
        lineNo: lineNo + 1,
        start: bufferOffset + start,
        bytes: withoutCR(buffer.subarray(start, end)),
        terminated: false,
      };
  } finally {
    await handle.close();
  }
}

export function isBlank(bytes: Buffer): boolean {
  for (const byte of bytes) if (byte !== 0x20 && byte !== 0x09 && byte !== CARRIAGE_RETURN) return false;
  return true;
}

export type ParsedLine = { ok: true; value: unknown } | { ok: false; reason: string };

export function parseLine(line: Buffer | string): ParsedLine {
  const text = typeof line === 'string' ? line : line.toString('utf8');
  if (text.trim() === '') return { ok: false, reason: 'blank line (a JSONL file may not contain empty lines)' };
  try {
    // Rows come from outside too (a dataset, a NeMo Gym run): nesting is bounded as for any received JSON (D19).
    return { ok: true, value: parseBoundedJson(text, MAX_ENVELOPED_JSON_DEPTH) };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
}

/** A malformed line of a file the user gave us: stops the command with `<file>:<line>: <reason>`. */
export function malformedLine(
  path: string,
  lineNo: number,
  reason: string,
  fix = 'fix or remove that line',
): ConfigError {
  return new ConfigError(
    `${path}:${lineNo}: malformed JSONL line: ${reason}. Every line must be one JSON object; ${fix}.`,
    'GYM_CONFIG_JSONL',
  );
}

/** One row per line, whole lines only, each written with a single `write` the moment it is appended. */
export class LineAppender {
  private constructor(
    readonly path: string,
    private fd: number | undefined,
  ) {}

  static open(path: string): LineAppender {
    return new LineAppender(path, openSync(path, 'a'));
  }

  append(json: string): void {
    if (this.fd === undefined) throw new Error(`${this.path} is closed`);
    const line = `${json}\n`;
    // A regular file takes the whole line in one write; the rest only guards against a short write.
    const written = writeSync(this.fd, line);
    const bytes = Buffer.byteLength(line);
    if (written < bytes) {
      const rest = Buffer.from(line).subarray(written);
      for (let offset = 0; offset < rest.length;) offset += writeSync(this.fd, rest, offset);
    }
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/**
 * Writes lines in large batches to a new file that is renamed into place at the end: for files written whole
 * (materialized inputs, merged shards), where per-line writes would only cost time. Each line is encoded into
 * one reused buffer at once, so no string outlives its line.
 */
export class BatchedFileWriter {
  private readonly temporary: string;
  private readonly fd: number;
  private readonly buffer = Buffer.allocUnsafe(1 << 20);
  private used = 0;

  constructor(private readonly target: string) {
    this.temporary = `${target}.tmp-${process.pid}`;
    this.fd = openSync(this.temporary, 'w');
  }

  line(text: string): void {
    // Worst case 3 bytes per UTF-16 unit, plus the newline.
    if (this.used + text.length * 3 + 1 > this.buffer.length) {
      this.flush();
      if (text.length * 3 + 1 > this.buffer.length) {
        this.writeAll(Buffer.from(`${text}\n`, 'utf8'));
        return;
      }
    }
    this.used += this.buffer.write(text, this.used, 'utf8');
    this.buffer[this.used++] = NEWLINE;
  }

  private writeAll(bytes: Buffer): void {
    for (let offset = 0; offset < bytes.length;) offset += writeSync(this.fd, bytes, offset);
  }

  private flush(): void {
    this.writeAll(this.buffer.subarray(0, this.used));
    this.used = 0;
  }

  /** Flush and rename over the target: readers see the old file or the whole new one, never a prefix. */
  commit(): void {
    this.flush();
    closeSync(this.fd);
    renameSync(this.temporary, this.target);
  }

  /** Give up: the target is left untouched, and the temporary file is removed. */
  abandon(): void {
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
    rmSync(this.temporary, { force: true });
  }
}

/** Write a file whole or not at all: it is written under a temporary name, then renamed over the target. */
export function writeFileAtomic(path: string, text: string): void {
  const temporary = `${path}.tmp-${process.pid}`;
  writeFileSync(temporary, text);
  renameSync(temporary, path);
}

/** Cut a file to `length` bytes (drops a torn tail so the next appended line starts on a line of its own). */
export function truncateFile(path: string, length: number): void {
  const fd = openSync(path, 'r+');
  try {
    ftruncateSync(fd, length);
  } finally {
    closeSync(fd);
  }
}

/** Whether a file exists and holds anything but whitespace. Reads only as far as the first non-blank byte. */
export function holdsRows(path: string): boolean {
  if (!existsSync(path) || statSync(path).size === 0) return false;
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(64 * 1024);
    for (let position = 0; ;) {
      const n = readSync(fd, buf, 0, buf.length, position);
      if (n === 0) return false;
      for (let i = 0; i < n; i++) {
        const byte = buf[i]!;
        if (byte !== 0x20 && byte !== 0x09 && byte !== NEWLINE && byte !== CARRIAGE_RETURN) return true;
      }
      position += n;
    }
  } finally {
    closeSync(fd);
  }
}

export interface TornTail {
  lineNo: number;
  /** Byte offset where the torn line starts: the length to cut the file to. */
  start: number;
}

/**
 * Read a file of rows the collector appends to (rollouts, failures sidecar, shards). Blank lines are skipped.
 * The last line is *torn* when it has no newline or does not parse — what a collector killed mid-write leaves —
 * and is reported instead of parsed. A bad line anywhere else is damage we cannot explain: a ConfigError.
 * `parse` is `parseLine` unless a reader needs less of each row (with the same verdicts).
 */
export async function scanRowsFile(
  path: string,
  onRow: (row: Record<string, unknown>, line: RawLine) => void,
  parse: (line: Buffer) => ParsedLine = parseLine,
): Promise<{ torn: TornTail | undefined }> {
  let suspect: { line: RawLine; reason: string } | undefined;
  for await (const line of readRawLines(path)) {
    if (isBlank(line.bytes)) {
      if (!line.terminated) return { torn: suspect ? tail(suspect.line) : tail(line) };
      continue;
    }
    if (suspect) {
      throw malformedLine(
        path,
        suspect.line.lineNo,
        suspect.reason,
        'only a torn last line is ignored; repair or remove this line',
      );
    }
    if (!line.terminated) return { torn: tail(line) };
    const parsed = parse(line.bytes);
    if (!parsed.ok) suspect = { line, reason: parsed.reason };
    else if (typeof parsed.value !== 'object' || parsed.value === null || Array.isArray(parsed.value)) {
      suspect = { line, reason: 'expected a JSON object' };
    } else onRow(parsed.value as Record<string, unknown>, line);
  }
  return { torn: suspect ? tail(suspect.line) : undefined };
}

function tail(line: RawLine): TornTail {
  return { lineNo: line.lineNo, start: line.start };
}
