import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { isMainModule } from '../../../src/main-module.js';
import { seededRandom } from '../../../src/seeded-random.js';
import { readGeneratorFlags, seedFlag } from '../../../src/generator-args.js';
import { COUNTER_TOOLS } from '../../../src/counter/tools.js';

/**
 * Synthetic counter tasks in the shape of `data/example.jsonl`, for load tests and benchmarks:
 *
 *   node dist/resources_servers/example_session_state_mgmt/scripts/generate.js --rows 100000 --out data/bench.jsonl [--seed 7]
 *
 * Each row asks to add two numbers to a hidden initial count and read it back; `expected_count = initial_count +
 * a + b`. Rows stream to disk (memory stays flat for any `--rows`), and the same `--seed` writes the same bytes.
 */

const TOOLS_JSON = JSON.stringify(COUNTER_TOOLS);

export interface CounterRow {
  responses_create_params: { input: Array<{ content: string; role: 'user' }>; tools: typeof COUNTER_TOOLS };
  expected_count: number;
  initial_count: number;
}

/** The JSON lines (without newline), one per row, in order. */
export function* counterRowLines(rows: number, seed: number): Generator<string> {
  const random = seededRandom(seed);
  const int = (low: number, high: number): number => low + Math.floor(random() * (high - low + 1));
  for (let i = 0; i < rows; i++) {
    const initial = int(0, 100);
    const a = int(1, 50);
    const b = int(1, 50);
    const prompt = JSON.stringify(`add ${a} then add ${b} then get the count`);
    // Built as text so the shared tools array is encoded once, not once per row.
    yield (
      `{"responses_create_params":{"input":[{"content":${prompt},"role":"user"}],"tools":${TOOLS_JSON}},` +
      `"expected_count":${initial + a + b},"initial_count":${initial}}`
    );
  }
}

/** Stream `rows` lines to `out`, respecting back-pressure. */
export async function writeCounterRows(out: string, rows: number, seed: number): Promise<void> {
  const stream = createWriteStream(out);
  let batch = '';
  for (const line of counterRowLines(rows, seed)) {
    batch += `${line}\n`;
    if (batch.length >= 1 << 16) {
      if (!stream.write(batch)) await once(stream, 'drain');
      batch = '';
    }
  }
  stream.end(batch);
  await once(stream, 'finish');
}

interface Args {
  rows: number;
  out: string;
  seed: number;
}

export function parseArgs(argv: readonly string[]): Args {
  const { values } = readGeneratorFlags(argv, ['--rows', '--out', '--seed']);
  const rows = Number(values.get('--rows') ?? '100000');
  const out = values.get('--out');
  if (!Number.isInteger(rows) || rows < 0)
    throw new Error(`--rows must be a non-negative integer, got '${values.get('--rows')}'`);
  const seed = seedFlag(values);
  if (!out) throw new Error('--out <path> is required');
  return { rows, out, seed };
}

if (isMainModule(import.meta.url)) {
  try {
    const args = parseArgs(process.argv.slice(2));
    await writeCounterRows(args.out, args.rows, args.seed);
    process.stdout.write(`Wrote ${args.rows} rows to ${args.out} (seed ${args.seed})\n`);
  } catch (err) {
    process.stderr.write(
      `Error: ${err instanceof Error ? err.message : String(err)}\n` +
        'Usage: generate.js --rows <N> --out <path> [--seed <int>]\n',
    );
    process.exitCode = 2;
  }
}
