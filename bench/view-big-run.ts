/**
 * Big-run figures for `gym view` (issue 14): writes a run of N rows shaped like the collector's (default 1,000,000,
 * ~1 KB each, 2% failures in the sidecar), then starts the real `gym view` on it and reports how long the index
 * took to open and the viewer's peak resident memory (VmHWM), plus the time of a few later pages. It reports; it
 * asserts nothing (figures, not a timed test).
 *
 *   node dist/bench/view-big-run.js [--rows 1000000] [--dir /tmp/x] [--keep]
 */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { REPO } from './gym.js';

function row(i: number, failed: boolean): string {
  const task = Math.floor(i / 4);
  const steps = 1 + (i % 4);
  const output: unknown[] = [];
  for (let s = 0; s < steps - 1; s++) {
    output.push({ type: 'function_call', call_id: `c${s}`, name: 'increment_counter', arguments: `{"count":${s}}` });
    output.push({ type: 'function_call_output', call_id: `c${s}`, output: `{"count":${s + 3}}` });
  }
  output.push({
    type: 'message',
    role: 'assistant',
    content: [{ type: 'output_text', text: `The count is ${task}.` }],
  });
  const response = {
    id: `resp_${i}`,
    object: 'response',
    model: 'bench',
    status: 'completed',
    output,
    usage: { input_tokens: 200 + (i % 97), output_tokens: 40 + (i % 13), total_tokens: 240 + (i % 97) + (i % 13) },
  };
  const base = {
    responses_create_params: {
      input: [{ role: 'user', content: `add ${task} then get the count` }],
      tools: [{ type: 'function', name: 'increment_counter', parameters: { type: 'object' } }],
    },
    _ng_task_index: task,
    _ng_rollout_index: i % 4,
    agent_ref: { name: 'remote_agent' },
  };
  // Only failure rows carry step latencies (success rows are the verify response plus stamps, C4).
  const latencies = Array.from({ length: steps }, (_, s) => ((i * 7 + s * 13) % 900) / 1000 + 0.05);
  if (failed)
    return JSON.stringify({
      ...base,
      reward: 0,
      response: { id: 'remote_agent_failure', object: 'response', output: [] },
      error: 'HTTP 500: service exploded',
      _ng_failure_class: 'remote_agent_error',
      _ng_partial_response: response,
      _ng_step_latency_secs: latencies,
    });
  return JSON.stringify({ ...base, response, reward: (i % 3) / 2 });
}

async function writeRun(file: string, rows: number): Promise<void> {
  const main = createWriteStream(file);
  const failures = createWriteStream(file.replace(/\.jsonl$/, '_failures.jsonl'));
  for (let i = 0; i < rows; i++) {
    const failed = i % 50 === 7;
    const stream = failed ? failures : main;
    if (!stream.write(`${row(i, failed)}\n`)) await once(stream, 'drain');
  }
  main.end();
  failures.end();
  await Promise.all([once(main, 'finish'), once(failures, 'finish')]);
}

function peakRssMb(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Math.round(Number(match[1]) / 1024) : NaN;
}

async function timed(url: string): Promise<{ ms: number; status: number; bytes: number }> {
  const started = performance.now();
  const res = await fetch(url);
  const text = await res.text();
  return { ms: Math.round(performance.now() - started), status: res.status, bytes: text.length };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { rows: { type: 'string' }, dir: { type: 'string' }, keep: { type: 'boolean' } },
  });
  const rows = Number(values.rows ?? 1_000_000);
  const dir = values.dir ?? mkdtempSync(path.join(os.tmpdir(), 'tsgym-view-big-'));
  const file = path.join(dir, 'rollouts.jsonl');
  if (!existsSync(file)) {
    const started = performance.now();
    await writeRun(file, rows);
    process.stdout.write(
      `wrote ${rows} rows (${Math.round(statSync(file).size / 1e6)} MB + sidecar) in ${Math.round(performance.now() - started)} ms\n`,
    );
  }
  const started = performance.now();
  const child = spawn(process.execPath, [path.join(REPO, 'bin', 'gym.js'), 'view', file, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.setEncoding('utf8');
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
      const match = /at (http:\/\/[\d.:]+)/.exec(stdout);
      if (match) resolve(match[1]!);
    });
    child.once('exit', () => reject(new Error(`gym view exited: ${stdout}`)));
  });
  const first = await timed(`${url}/`);
  const openMs = Math.round(performance.now() - started);
  const indexedAt = await new Promise<number>((resolve) => {
    const check = (): void => (/\d+ rollouts/.test(stdout) ? resolve(performance.now()) : void setTimeout(check, 20));
    check();
  });
  const figures = {
    rows,
    /** Process start to the first index page answered (it shows the rows indexed so far). */
    open_index_ms: openMs,
    first_page_ms: first.ms,
    /** Process start to the whole run indexed (the CLI prints the counts). */
    fully_indexed_ms: Math.round(indexedAt - started),
    page_1000_ms: (await timed(`${url}/?page=1000`)).ms,
    failures_filter_ms: (await timed(`${url}/?status=failed`)).ms,
    charts_ms: (await timed(`${url}/charts`)).ms,
    live_fragment_ms: (await timed(`${url}/live`)).ms,
    rollout_page_ms: (await timed(`${url}/rollout?file=main&line=${Math.floor(rows / 2)}`)).ms,
    peak_rss_mb: peakRssMb(child.pid!),
  };
  process.stdout.write(`${JSON.stringify(figures, null, 1)}\n`);
  child.kill('SIGTERM');
  await once(child, 'exit');
  if (!values.keep && values.dir === undefined) rmSync(dir, { recursive: true, force: true });
}

await main();
