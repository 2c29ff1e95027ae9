import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError } from '../errors.js';
import { html } from './html.js';
import { startViewServer, type ViewServer } from './server.js';
import { appendRaw, HOSTILE, writeRun } from '../../test/support/view-runs.js';
import { eventually } from '../../test/support/wait.js';

const servers: ViewServer[] = [];
after(() => Promise.all(servers.map((server) => server.close())));

async function serve(rollouts: string, pageSize?: number): Promise<ViewServer> {
  const server = await startViewServer({ rolloutsPath: rollouts, port: 0, ...(pageSize ? { pageSize } : {}) });
  servers.push(server);
  // A request waits only so long for the index before answering with the rows indexed so far (on a busy machine, not
  // all of them): the rows are all indexed first.
  await server.index();
  return server;
}

async function get(server: ViewServer, target: string): Promise<{ status: number; text: string; type: string | null }> {
  const res = await fetch(server.url + target);
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
}

const decode = (text: string): string =>
  text
    .replace(/<[^>]*>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .trim();

/** The index table's rows as cell texts: task, rollout, attempt, agent, reward, status, steps, error. */
/** The "All rollouts" table (the live section has tables of its own). */
function rolloutsTable(page: string): string {
  return /<table id="rollouts">([\s\S]*?)<\/table>/.exec(page)?.[1] ?? '';
}

function tableRows(page: string): string[][] {
  const body = /<tbody>([\s\S]*)<\/tbody>/.exec(rolloutsTable(page))?.[1] ?? '';
  return [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)]
    .map((row) => [...row[1]!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((cell) => decode(cell[1]!)))
    .filter((cells) => cells.length > 1)
    .map((cells) => cells.slice(0, 8));
}

function detailLinks(page: string): string[] {
  return [...rolloutsTable(page).matchAll(/<a href="(\/rollout\?[^"]+)">view<\/a>/g)].map((match) =>
    match[1]!.replace(/&amp;/g, '&'),
  );
}

describe('index page', () => {
  test('lists successes and failures from both files, sorted by (task, rollout), with the summary counts', async () => {
    const run = writeRun();
    const server = await serve(run.rollouts);
    const { status, text, type } = await get(server, '/');
    assert.equal(status, 200);
    assert.match(type ?? '', /^text\/html/);
    assert.match(
      decode(text),
      /5 rollouts: 3 ok, 2 failed \(1 retryable, 1 terminal\) · mean reward 0\.5 over 3 successes/,
    );
    assert.deepEqual(tableRows(text), [
      ['0', '0', '0', 'remote_agent', '0', 'ok', '1 message', ''],
      ['0', '1', '0', 'remote_agent', '0.5', 'ok', '1 call · 1 output · 1 message', ''],
      ['1', '0', '0', 'remote_agent', '1', 'ok', '1 reasoning · 1 call · 1 output · 1 message · 1 web_search_call', ''],
      ['2', '0', '1', 'remote_agent', '0', 'failed', '1 call', `transport error <b>${HOSTILE}</b>`],
      [
        '2',
        '1',
        '1',
        'remote_agent',
        '0',
        'failed-terminal',
        'none',
        'service broke the contract: step 2 returned no output',
      ],
    ]);
    assert.deepEqual(detailLinks(text), [
      '/rollout?file=main&line=3',
      '/rollout?file=main&line=2',
      '/rollout?file=main&line=1',
      '/rollout?file=failures&line=2',
      '/rollout?file=failures&line=1',
    ]);
    // No status file (a run written by NeMo Gym, say): no latency chart, whatever the failure rows carry.
    assert.match(
      text,
      /data-chart="latency"><figcaption>Service latency per step<\/figcaption><p class="muted">No latency data: per-step service latency comes from &lt;stem&gt;_status\.json/,
    );
  });

  test('shows the rollout health line: computed from the files, then the saved summary once it is newer', async () => {
    const run = writeRun();
    const server = await serve(run.rollouts);
    const healthOf = async (): Promise<string> => {
      // The first load may only say the check is under way (a busy machine): the line comes on a later one.
      let line = '';
      await eventually(
        async () => {
          line = decode(/<p class="health">([\s\S]*?)<\/p>/.exec((await get(server, '/')).text)?.[1] ?? 'no line');
          return !line.includes('checking the files');
        },
        { what: () => `the health line (last: ${line})`, timeoutMs: 60_000, intervalMs: 50 },
      );
      return line;
    };
    assert.equal(await healthOf(), 'Rollout health: 5 checked, 3 healthy, 2 unhealthy (rollout_failed 2)');
    // What gym eval run or gym eval health wrote beside the run wins when it is no older than the files.
    const summary = { checked: 7, healthy: 6, unhealthy: 1, checks: { rollout_usage_missing: { count: 1 } } };
    writeFileSync(path.join(run.dir, 'rollouts_quality_summary.json'), JSON.stringify(summary));
    assert.equal(await healthOf(), 'Rollout health: 7 checked, 6 healthy, 1 unhealthy (rollout_usage_missing 1)');
  });

  test('filters by status through the query string', async () => {
    const server = await serve(writeRun().rollouts);
    const statuses = async (query: string) =>
      tableRows((await get(server, `/${query}`)).text).map((cells) => `${cells[0]}:${cells[1]} ${cells[5]}`);
    assert.deepEqual(await statuses('?status=failed'), ['2:0 failed']);
    assert.deepEqual(await statuses('?status=failed-terminal'), ['2:1 failed-terminal']);
    assert.deepEqual(await statuses('?status=failed,failed-terminal'), ['2:0 failed', '2:1 failed-terminal']);
    assert.deepEqual(await statuses('?status=ok'), ['0:0 ok', '0:1 ok', '1:0 ok']);
    const bad = await get(server, '/?status=broken');
    assert.equal(bad.status, 400);
    assert.match(decode(bad.text), /Unknown status 'broken'/);
  });

  test('pages the table, keeping the filter in the page links', async () => {
    const server = await serve(writeRun().rollouts, 2);
    const first = await get(server, '/');
    assert.deepEqual(
      tableRows(first.text).map((cells) => `${cells[0]}:${cells[1]}`),
      ['0:0', '0:1'],
    );
    assert.match(decode(first.text), /Page 1 of 3 \(rows 1–2 of 5\)/);
    assert.match(first.text, /<a href="\/\?page=2">next →<\/a>/);
    assert.doesNotMatch(first.text, /← previous/);

    const last = await get(server, '/?page=3');
    assert.deepEqual(
      tableRows(last.text).map((cells) => `${cells[0]}:${cells[1]}`),
      ['2:1'],
    );
    assert.match(last.text, /<a href="\/\?page=2">← previous<\/a>/);
    assert.doesNotMatch(last.text, /next →/);

    const filtered = await get(server, '/?status=ok&page=2');
    assert.deepEqual(
      tableRows(filtered.text).map((cells) => `${cells[0]}:${cells[1]}`),
      ['1:0'],
    );
    assert.match(filtered.text, /<a href="\/\?status=ok">← previous<\/a>/);
    assert.equal((await get(server, '/?page=0')).status, 400);
  });

  test('a missing failures sidecar is fine; a missing rollouts file is a ConfigError naming it', async () => {
    const run = writeRun({ failures: false });
    const server = await serve(run.rollouts);
    const { text } = await get(server, '/');
    assert.match(decode(text), /No failures sidecar \(.*rollouts_failures\.jsonl does not exist\)/);
    assert.match(decode(text), /3 rollouts: 3 ok, 0 failed/);
    assert.equal(tableRows(text).length, 3);

    const missing = path.join(run.dir, 'nope.jsonl');
    await assert.rejects(startViewServer({ rolloutsPath: missing }), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.message, /nope\.jsonl does not exist/);
      return true;
    });
  });

  test('a port already in use is a ConfigError that says how to pick another', async () => {
    const run = writeRun();
    const first = await serve(run.rollouts);
    await assert.rejects(startViewServer({ rolloutsPath: run.rollouts, port: first.port }), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.message, new RegExp(`port ${first.port} is already in use.*--port`));
      return true;
    });
  });

  test('a torn last line is skipped and noted; once whole (and after more rows), the index picks the file up again', async () => {
    const run = writeRun();
    appendRaw(run.rollouts, '{"_ng_task_index": 9, "_ng_rollout_index": 0, "resp');
    const server = await serve(run.rollouts);
    const torn = await get(server, '/');
    assert.equal(torn.status, 200);
    assert.match(decode(torn.text), /5 rollouts: 3 ok/);
    assert.match(decode(torn.text), /1 unreadable line skipped:[\s\S]*rollouts\.jsonl:4 — incomplete last line/);

    appendRaw(run.rollouts, 'onse": {"output": []}, "reward": 1, "agent_ref": {"name": "remote_agent"}}\n');
    await server.index();
    const whole = await get(server, '/');
    assert.match(decode(whole.text), /6 rollouts: 4 ok/);
    assert.doesNotMatch(whole.text, /unreadable line/);
    assert.equal(tableRows(whole.text).at(-1)?.[0], '9');
  });
});

describe('detail page', () => {
  test('renders the task input, then each trajectory item in order, usage, reward and the raw row', async () => {
    const server = await serve(writeRun().rollouts);
    const { status, text } = await get(server, '/rollout?file=main&line=1');
    assert.equal(status, 200);
    const markers = [
      'Task input',
      'task 1',
      'Tools offered: lookup',
      '1. reasoning',
      'Thinking about the capital',
      '2. call <code>lookup</code>',
      '{\n  &quot;city&quot;: &quot;Paris&quot;,\n  &quot;days&quot;: 2\n}',
      '3. output of <code>lookup</code>',
      '&quot;temperature&quot;: 21',
      '4. assistant message',
      'It is 21 degrees.',
      '5. web_search_call',
      '&quot;query&quot;: &quot;weather paris&quot;',
      'Usage',
      'output_tokens_details.reasoning_tokens</dt><dd>3',
      'Raw row',
      '<details>',
    ];
    let previous = -1;
    for (const marker of markers) {
      const at = text.indexOf(marker, previous + 1);
      assert.ok(at > previous, `expected ${JSON.stringify(marker)} after position ${previous}`);
      previous = at;
    }
    assert.match(decode(text), /Task 1 · rollout 0/);
    assert.match(text, /<dt>reward<\/dt><dd>1<\/dd>/);
    assert.match(text, /<dt>status<\/dt><dd><span class="status-ok">ok<\/span><\/dd>/);
    assert.doesNotMatch(text, /<h2>Error<\/h2>/);
  });

  test('a failure shows its error, its class and its partial trajectory; a terminal one without a trajectory says so', async () => {
    const server = await serve(writeRun().rollouts);
    const retryable = decode((await get(server, '/rollout?file=failures&line=2')).text);
    assert.match(retryable, /Task 2 · rollout 0 · attempt 1/);
    assert.match(retryable, /Error\s*transport error <b><script>/);
    assert.match(retryable, /failure class remote_agent_error · retryable/);
    assert.match(retryable, /Partial trajectory\s*1\. call lookup/);
    assert.match(retryable, /input_tokens\s*2/);
    assert.match(retryable, /service latency per step\s*0\.25s/);

    const terminal = decode((await get(server, '/rollout?file=failures&line=1')).text);
    assert.match(terminal, /terminal \(never retried\)/);
    assert.match(terminal, /No partial trajectory was recorded/);
  });

  test('unknown rows and bad parameters answer an HTML error page', async () => {
    const server = await serve(writeRun().rollouts);
    const missing = await get(server, '/rollout?file=main&line=99');
    assert.equal(missing.status, 404);
    assert.match(decode(missing.text), /rollouts\.jsonl has no readable row on line 99/);
    assert.equal((await get(server, '/rollout?file=other&line=1')).status, 400);
    assert.equal((await get(server, '/rollout?file=main&line=x')).status, 400);
  });
});

describe('untrusted content', () => {
  test('script tags from messages, tool calls, outputs, task input and errors are escaped on every page', async () => {
    const server = await serve(writeRun().rollouts);
    const pages = ['/', '/rollout?file=main&line=2', '/rollout?file=failures&line=2'];
    for (const target of pages) {
      // The viewer's own script is the one script a page may load.
      const text = (await get(server, target)).text.replace('<script src="/assets/live.js" defer></script>', '');
      assert.doesNotMatch(text, /<script|<b>/i, `${target} must not contain live markup from the files`);
      assert.match(text, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/, `${target} shows the text escaped`);
    }
    const detail = (await get(server, '/rollout?file=main&line=2')).text;
    for (const shown of [`please ${HOSTILE}`, `found ${HOSTILE}`, `answer ${HOSTILE}`])
      assert.ok(decode(detail).includes(shown), shown);
  });

  test('the html template escapes interpolations but not nested fragments; pages forbid scripts outright', async () => {
    assert.equal(
      html`<p>${'<a href="x">&\''}</p>${html`<br>`}`.text,
      '<p>&lt;a href=&quot;x&quot;&gt;&amp;&#39;</p><br>',
    );
    const server = await serve(writeRun().rollouts);
    const res = await fetch(`${server.url}/`);
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'/);
  });

  test('requests addressed to a non-loopback host name are refused (DNS rebinding)', async () => {
    const server = await serve(writeRun().rollouts);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.get(
        { host: '127.0.0.1', port: server.port, path: '/', headers: { host: `attacker.example:${server.port}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.once('error', reject);
    });
    assert.equal(status, 403);
    assert.equal((await get(server, '/')).status, 200);
  });
});

describe('live section', () => {
  const statusOf = (updatedAt: string) => ({
    version: 1,
    state: 'running',
    started_at: updatedAt,
    updated_at: updatedAt,
    elapsed_s: 5,
    stall_warning_secs: 120,
    totals: {
      total: 9,
      done: 5,
      completed: 3,
      failed: 2,
      failed_by_class: { remote_agent_error: 2 },
      in_flight: 1,
      stalled: 1,
      rollouts_per_s: 1,
      eta_s: 4,
      mean_reward: 0.5,
    },
    in_flight: [
      {
        task_index: 3,
        rollout_index: 0,
        attempt: 1,
        agent: 'remote_agent',
        stage: 'running_tool',
        step: 2,
        tool: HOSTILE,
        elapsed_s: 200,
        since_progress_s: 150,
        stalled: true,
      },
    ],
    history: [
      { t_s: 1, done: 1, completed: 1, failed_by_class: {}, in_flight: 4 },
      { t_s: 3, done: 5, completed: 3, failed_by_class: { remote_agent_error: 2 }, in_flight: 1 },
    ],
    // The second and third entries are malformed and dropped.
    step_latency_secs: [
      { step: 1, count: 5, p50: 0.2, p90: 0.5, p99: 0.9 },
      { step: 'two', count: 3, p50: 0.1, p90: 0.2, p99: 0.3 },
      { step: 3, count: 0, p50: 0, p90: 0, p99: 0 },
      { step: 4, count: 2, p50: 0.3, p90: 0.4, p99: 0.4 },
    ],
  });

  test('the in-flight table comes from <stem>_status.json (escaped), a status no longer rewritten is flagged, a broken one ignored', async () => {
    const run = writeRun();
    const statusFile = path.join(run.dir, 'rollouts_status.json');
    const server = await serve(run.rollouts);
    // Written just before it is read: "not updated" needs 10 s without a write, far more than one request takes.
    writeFileSync(statusFile, JSON.stringify(statusOf(new Date().toISOString())));
    const live = await get(server, '/live');
    assert.equal(live.status, 200);
    assert.match(live.text, /<tr data-key="3:0:1" class="stalled">/);
    assert.match(decode(live.text), /running_tool <script>alert\(1\)<\/script>\s*2\s*3m20s\s*2m30s \(stalled\)/);
    assert.doesNotMatch(live.text, /<script/);
    assert.match(decode(live.text), /Run running: 5\/9 done · 1 in flight · 1 rollouts\/s · ETA 4\.0s · 1 stalled/);
    assert.doesNotMatch(live.text, /not updated for/);
    const page = (await get(server, '/')).text;
    assert.match(
      page,
      /<figure class="chart" data-chart="failures">[\s\S]*?<path d="M[^"]+"[^>]*class="series"><title>remote_agent_error<\/title>/,
    );
    // Per-step latency is drawn from the status file: p50/p90/p99 over the two valid steps.
    const latency = /<figure class="chart" data-chart="latency">[\s\S]*?<\/figure>/.exec(page)?.[0] ?? '';
    assert.deepEqual(
      [...latency.matchAll(/<path d="(M[^"]+)"[^>]*class="series"><title>([^<]+)<\/title>/g)].map((m) => [
        m[2],
        m[1]!.split('L').length,
      ]),
      [
        ['p50 (s)', 2],
        ['p90 (s)', 2],
        ['p99 (s)', 2],
      ],
    );

    // Last written a minute ago: the age shown is that minute plus however long the request took, never less.
    const written = Date.now();
    writeFileSync(statusFile, JSON.stringify(statusOf(new Date(written - 60_000).toISOString())));
    const stale = decode((await get(server, '/live')).text);
    const waited = (Date.now() - written) / 1000;
    const age = /not updated for 1m(\d\d)s: the collector may have stopped/.exec(stale);
    assert.ok(age, stale);
    assert.ok(Number(age[1]) <= Math.ceil(waited), `shown ${age[0]} after ${waited}s`);

    writeFileSync(statusFile, '{"state": "running", "in_fl');
    assert.match(decode((await get(server, '/live')).text), /No live status/);
    assert.match(
      (await get(server, '/charts')).text,
      /data-chart="latency"><figcaption>Service latency per step<\/figcaption><p class="muted">No latency data: /,
    );
  });
});
