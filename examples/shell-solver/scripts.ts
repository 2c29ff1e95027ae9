import type { ToolCall } from '../../src/service/index.js';

/**
 * The scripted solutions of the shell environment's example tasks, one per task: how a careful engineer would
 * solve each one with the four tools — look, change, run to confirm. A script is a list of steps; each step sees
 * the outputs of every tool call so far (parsed JSON) and returns the next batch of calls. They prove the tasks,
 * the tools and the checks; they are not a model.
 */

export interface TaskScript {
  id: string;
  /** Recognises the task from its instruction. */
  recognise: RegExp;
  steps: Array<(outputs: unknown[]) => ToolCall[]>;
  /** The final answer, from every output. */
  summary(outputs: unknown[]): string;
}

const run = (command: string): ToolCall => ({ name: 'run_command', arguments: { command } });
const read = (path: string): ToolCall => ({ name: 'read_file', arguments: { path } });
const write = (path: string, content: string): ToolCall => ({ name: 'write_file', arguments: { path, content } });
const list = (path = '.'): ToolCall => ({ name: 'list_dir', arguments: { path } });

/** The stdout of a run_command output (an empty string for anything else). */
export function stdoutOf(output: unknown): string {
  return output !== null && typeof output === 'object' && typeof (output as { stdout?: unknown }).stdout === 'string'
    ? (output as { stdout: string }).stdout
    : '';
}

const lastStdout = (outputs: unknown[]): string => stdoutOf(outputs[outputs.length - 1]).trim();

export const SCRIPTS: readonly TaskScript[] = [
  {
    id: 'fix-shell-script',
    recognise: /count_words\.sh/,
    steps: [
      () => [list(), read('count_words.sh')],
      () => [
        write(
          'count_words.sh',
          [
            '#!/bin/sh',
            '# Usage: count_words.sh FILE...',
            '# Prints "<file>: <words>" for each file, then "total: <sum>".',
            'total=0',
            'for f in "$@"; do',
            '  n=$(wc -w < "$f")',
            '  echo "$f: $n"',
            '  total=$((total + n))',
            'done',
            'echo "total: $total"',
            '',
          ].join('\n'),
        ),
      ],
      () => [
        run("printf 'x y z\\n' > '/tmp/with space.txt' && sh count_words.sh '/tmp/with space.txt' count_words.sh"),
      ],
    ],
    summary: (outputs) =>
      `Fixed count_words.sh (loops over "$@", quotes each name). Trial run:\n${lastStdout(outputs)}`,
  },
  {
    id: 'fix-python-script',
    recognise: /stats\.py/,
    steps: [
      () => [read('stats.py')],
      () => [
        write(
          'stats.py',
          [
            'import sys',
            '',
            '',
            'def read_numbers(stream):',
            '    return [float(line) for line in stream if line.strip()]',
            '',
            '',
            'def mean(values):',
            '    return sum(values) / len(values)',
            '',
            '',
            'def median(values):',
            '    ordered = sorted(values)',
            '    middle = len(ordered) // 2',
            '    if len(ordered) % 2:',
            '        return ordered[middle]',
            '    return (ordered[middle - 1] + ordered[middle]) / 2',
            '',
            '',
            "if __name__ == '__main__':",
            '    numbers = read_numbers(sys.stdin)',
            "    print('mean: %.2f' % mean(numbers))",
            "    print('median: %.2f' % median(numbers))",
            '',
          ].join('\n'),
        ),
      ],
      () => [run("printf '4\\n1\\n3\\n2\\n' | python3 stats.py")],
    ],
    summary: (outputs) =>
      `mean now uses true division and median averages the two middle values for an even count:\n${lastStdout(outputs)}`,
  },
  {
    id: 'make-test-pass',
    recognise: /test_roman/,
    steps: [
      () => [run('python3 -m unittest test_roman 2>&1 | tail -n 3')],
      () => [
        write(
          'roman.py',
          [
            "NUMERALS = [(1000, 'M'), (900, 'CM'), (500, 'D'), (400, 'CD'), (100, 'C'), (90, 'XC'),",
            "            (50, 'L'), (40, 'XL'), (10, 'X'), (9, 'IX'), (5, 'V'), (4, 'IV'), (1, 'I')]",
            '',
            '',
            'def to_roman(n):',
            '    """The Roman numeral of n, 1 <= n <= 3999."""',
            "    out = ''",
            '    for value, letters in NUMERALS:',
            '        while n >= value:',
            '            out += letters',
            '            n -= value',
            '    return out',
            '',
          ].join('\n'),
        ),
      ],
      () => [run('python3 -m unittest test_roman 2>&1 | tail -n 1')],
    ],
    summary: (outputs) =>
      `Added the subtractive pairs (CM, CD, XC, XL, IX, IV) to roman.py; unittest: ${lastStdout(outputs)}`,
  },
  {
    id: 'find-file-by-content',
    recognise: /INV-7734/,
    steps: [
      () => [run("grep -rlw 'INV-7734' archive")],
      (outputs) => [write('answer.txt', `${lastStdout(outputs).split('\n')[0]}\n`)],
    ],
    summary: (outputs) => `The invoice is mentioned in ${stdoutOf(outputs[0]).trim()}; written to answer.txt.`,
  },
  {
    id: 'csv-transform',
    recognise: /summary\.csv/,
    steps: [
      () => [read('sales.csv')],
      () => [
        run(
          '{ echo region,revenue; awk -F, \'NR > 1 { revenue[$1] += $3 * $4 } END { for (r in revenue) printf "%s,%.2f\\n", r, revenue[r] }\' sales.csv | sort -t, -k2,2nr; } > summary.csv && cat summary.csv',
        ),
      ],
    ],
    summary: (outputs) => `summary.csv:\n${lastStdout(outputs)}`,
  },
  {
    id: 'write-program',
    recognise: /rle\.py/,
    steps: [
      () => [
        write(
          'rle.py',
          [
            'import re',
            'import sys',
            '',
            '',
            'def encode(text):',
            "    return ''.join('%s%d' % (m.group(1), len(m.group(0))) for m in re.finditer(r'(.)\\1*', text, re.S))",
            '',
            '',
            'def decode(text):',
            "    return ''.join(char * int(count) for char, count in re.findall(r'(\\D)(\\d+)', text, re.S))",
            '',
            '',
            "if __name__ == '__main__':",
            '    data = sys.stdin.read()',
            "    if data.endswith('\\n'):",
            '        data = data[:-1]',
            "    print(encode(data) if sys.argv[1:] == ['encode'] else decode(data))",
            '',
          ].join('\n'),
        ),
      ],
      () => [run("printf 'aaab\\n' | python3 rle.py encode && printf 'a3b1\\n' | python3 rle.py decode")],
    ],
    summary: (outputs) => `Wrote rle.py; encode aaab / decode a3b1:\n${lastStdout(outputs)}`,
  },
  {
    id: 'log-errors',
    recognise: /access\.log/,
    steps: [
      () => [run('head -n 3 access.log')],
      () => [
        run(
          "awk '$4 ~ /^5/ { count[$3]++ } END { for (p in count) print count[p], p }' access.log | sort -k1,1nr -k2,2 > errors.txt && cat errors.txt",
        ),
      ],
    ],
    summary: (outputs) => `errors.txt:\n${lastStdout(outputs)}`,
  },
  {
    id: 'rename-function',
    recognise: /fetch_data/,
    steps: [
      () => [run("grep -rnw --include='*.py' fetch_data src")],
      () => [
        run(
          "grep -rlw --include='*.py' fetch_data src | xargs sed -i 's/\\bfetch_data\\b/load_data/g' && grep -rnw --include='*.py' load_data src && cd src && python3 main.py",
        ),
      ],
    ],
    summary: (outputs) =>
      `Renamed fetch_data to load_data under src/ (fetch_data_cached kept):\n${lastStdout(outputs)}`,
  },
];
