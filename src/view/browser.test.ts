/**
 * `gym view` in a real browser: Debian's Chromium driven by playwright-core (never a downloaded browser). Every page
 * is checked on its DOM, never its pixels; every request the pages make must go to the loopback server (a listener
 * fails the test on any other URL), and no console error may appear (a CSP refusal of the live script would).
 * Screenshots go to the test's temp dir, and to $TSGYM_VIEW_SCREENSHOTS when set (how docs/*.png were made).
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { tempDir, writeJsonl } from '../../test/support/cli.js';
import { startGatedRun, type GatedRun } from '../../test/support/live-run.js';
import { startViewServer, type ViewServer } from './server.js';
import { FULL_TRAJECTORY, failure, success, writeRun } from '../../test/support/view-runs.js';

const CHROMIUM = '/usr/bin/chromium';
const shots = tempDir('tsgym-view-shots-');
let browser: Browser;
const servers: ViewServer[] = [];
const runs: GatedRun[] = [];

before(async () => {
  assert.ok(
    existsSync(CHROMIUM),
    `${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium; .ci/run does); these tests never download a browser.`,
  );
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-gpu', '--no-first-run'],
  });
});

after(async () => {
  await browser?.close();
  for (const server of servers) await server.close();
  for (const run of runs) {
    run.release();
    if (run.gym.child.exitCode === null) run.gym.child.kill('SIGTERM');
    await run.gym.result;
    await run.service.close();
  }
});

async function serve(rolloutsPath: string, comparePath?: string): Promise<ViewServer> {
  const server = await startViewServer({ rolloutsPath, port: 0, ...(comparePath ? { comparePath } : {}) });
  servers.push(server);
  // A page waits only so long for the index before showing the rows indexed so far: the rows are all indexed first.
  await server.index();
  return server;
}

/** Upper bound for every wait on a page (navigation, an element, a click): a busy machine, not a slow viewer. */
const PAGE_TIMEOUT_MS = 120_000;

/** A page whose every request must be to the loopback server and that must log no error. */
async function loopbackPage(): Promise<{ page: Page; check: () => void }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(PAGE_TIMEOUT_MS);
  const offLoopback: string[] = [];
  const errors: string[] = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.protocol === 'data:' || url.protocol === 'about:') return;
    if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) offLoopback.push(request.url());
  });
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (err) => errors.push(err.message));
  return {
    page,
    check: () => {
      assert.deepEqual(offLoopback, [], 'the pages requested URLs outside the server');
      assert.deepEqual(errors, [], 'the pages logged errors');
    },
  };
}

async function screenshot(page: Page, name: string): Promise<void> {
  const file = path.join(shots, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  assert.ok(existsSync(file));
  const docs = process.env.TSGYM_VIEW_SCREENSHOTS;
  if (docs) {
    mkdirSync(docs, { recursive: true });
    copyFileSync(file, path.join(docs, `${name}.png`));
  }
}

describe('gym view in Chromium', () => {
  test('the index lists every rollout, draws its charts as SVG, and links to a rollout page', async () => {
    const run = writeRun();
    const server = await serve(run.rollouts);
    const { page, check } = await loopbackPage();
    await page.goto(`${server.url}/`);
    assert.equal(await page.locator('#rollouts tbody tr').count(), 5);
    assert.match((await page.locator('p.summary').textContent()) ?? '', /5 rollouts: 3 ok, 2 failed/);
    // The reward histogram has bars; the tokens one too; charts without data say so instead of drawing.
    assert.ok((await page.locator('figure[data-chart="reward"] svg rect.bar').count()) > 0);
    assert.ok((await page.locator('figure[data-chart="tokens"] svg rect.bar').count()) > 0);
    assert.match((await page.locator('figure[data-chart="rate"]').textContent()) ?? '', /No history/);
    assert.match((await page.locator('figure[data-chart="latency"]').textContent()) ?? '', /No latency data/);
    // Untrusted text stays text: the fixture's <script> never becomes an element.
    assert.equal(await page.locator('script').count(), 1);
    assert.equal(await page.locator('script').getAttribute('src'), '/assets/live.js');
    await screenshot(page, 'index');

    await page.locator('#rollouts a', { hasText: 'view' }).nth(2).click();
    await page.waitForURL(/\/rollout\?file=main&line=1$/);
    assert.equal(await page.locator('h1').textContent(), 'Task 1 · rollout 0');
    assert.equal(await page.locator('.item').count(), FULL_TRAJECTORY.length + 1);
    await screenshot(page, 'rollout');
    check();
    await page.close();
  });

  test('the live page follows a real gym eval run: an in-flight row appears, then lands as a finished row', async () => {
    const run = await startGatedRun(['+stall_warning_secs=1']);
    runs.push(run);
    await run.held;
    // The collector created the rollouts file before sending anything.
    assert.ok(existsSync(run.rolloutsPath));
    const server = await serve(run.rolloutsPath);
    const { page, check } = await loopbackPage();
    await page.goto(`${server.url}/`);
    const inFlight = page.locator('#in-flight tr[data-key="0:0:0"]');
    await inFlight.waitFor({ timeout: PAGE_TIMEOUT_MS });
    await page.locator('#in-flight tr.stalled[data-key="0:0:0"]').waitFor({ timeout: PAGE_TIMEOUT_MS });
    const cells = await inFlight.locator('td').allTextContents();
    assert.equal(cells[3], 'remote_agent');
    assert.equal(cells[4], 'calling_service');
    assert.equal(cells[5], '1');
    assert.match(cells[7] ?? '', /\(stalled\)/);
    assert.match((await page.locator('.run-state').textContent()) ?? '', /Run running/);
    await screenshot(page, 'live');

    run.release();
    await page.locator('#recent tr[data-key="0:0:0"]').waitFor({ timeout: PAGE_TIMEOUT_MS });
    await page.locator('#live-body[data-state="finished"]').waitFor({ timeout: PAGE_TIMEOUT_MS });
    assert.equal(await page.locator('#in-flight tr').count(), 0);
    assert.match((await page.locator('#recent tr[data-key="0:0:0"]').textContent()) ?? '', /remote_agent\s*1\s*ok/);
    const result = await run.gym.result;
    assert.equal(result.code, 0, result.stderr);

    // After the run, the charts from its status file (history, step latencies) are drawn (charts refresh every 5 s;
    // a reload shows them at once).
    await server.index();
    await page.reload();
    for (const chart of ['rate', 'latency']) {
      const paths = page.locator(`figure[data-chart="${chart}"] svg path.series`);
      assert.ok((await paths.count()) > 0, `${chart} has a series`);
      assert.match((await paths.first().getAttribute('d')) ?? '', /^M[\d.]+,[\d.]+(L[\d.]+,[\d.]+)+$/);
    }
    await screenshot(page, 'live-finished');
    check();
    await page.close();
  });

  test('the comparison page sorts tasks into improved / regressed / unchanged and shows a task side by side', async () => {
    const a = writeRun();
    const bDir = tempDir('tsgym-view-b-');
    const b = path.join(bDir, 'rollouts.jsonl');
    const answer = (text: string) => [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }];
    writeJsonl(b, [
      success(0, 0, 1, answer('B solved task 0')),
      success(0, 1, 1, answer('B again')),
      success(1, 0, 0, answer('B got task 1 wrong')),
    ]);
    writeJsonl(path.join(bDir, 'rollouts_failures.jsonl'), [
      failure(2, 0, 'still broken', false),
      failure(2, 1, 'still broken', true),
    ]);
    const server = await serve(a.rollouts, b);
    const { page, check } = await loopbackPage();
    await page.goto(`${server.url}/compare`);
    const verdicts = Object.fromEntries(
      await Promise.all(
        (await page.locator('#compare tbody tr').all()).map(async (row): Promise<[string, string[]]> => [
          String(await row.getAttribute('data-task')),
          (await row.locator('td').allTextContents()).slice(1, 5),
        ]),
      ),
    );
    assert.deepEqual(verdicts, {
      0: ['0.25', '1', '+0.75', 'improved'],
      1: ['1', '0', '-1', 'regressed'],
      2: ['0', '0', '0', 'unchanged'],
    });
    assert.match(
      (await page.locator('.compare-summary').textContent()) ?? '',
      /3 tasks: 1 improved, 1 regressed, 1 unchanged/,
    );
    // Deltas +0.75, −1, 0: mean −0.0833, paired t interval ±4.303 × 0.5069 (as gym eval compare computes it).
    const difference = page.locator('.compare-verdict');
    assert.equal(await difference.getAttribute('data-verdict'), 'inconclusive');
    assert.match(
      (await difference.textContent()) ?? '',
      /over 3 paired tasks: -0\.0833, 95% CI \[-2\.26\d*, \+2\.09\d*\]/,
    );
    await screenshot(page, 'compare');

    await page.locator('#compare tr[data-task="1"] a', { hasText: 'side by side' }).click();
    await page.waitForURL(/\/compare\/task\?task=1$/);
    const columns = page.locator('.side-by-side .run-column');
    assert.equal(await columns.count(), 2);
    assert.match((await columns.nth(0).textContent()) ?? '', /It is 21 degrees\./);
    assert.match((await columns.nth(1).textContent()) ?? '', /B got task 1 wrong/);
    // Each column links to its own run's full rollout page.
    await columns.nth(1).locator('a', { hasText: 'full rollout page' }).click();
    await page.waitForURL(/\/rollout\?run=b&file=main&line=3$/);
    assert.match((await page.locator('h1').textContent()) ?? '', /Task 1 · rollout 0/);
    await screenshot(page, 'compare-task');
    check();
    await page.close();
  });
});
