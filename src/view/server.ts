/**
 * `gym view`'s server: the index page (with its live section and charts), one page per rollout, and with a second
 * run the comparison pages, served by tsgym's own `App`. Each request first brings the index up to date with the
 * files (only the bytes appended since the last request are read), so a run that is still writing is followed by
 * the page's own script (/assets/live.js) without reloads; rows are only ever read back from disk.
 */
import { stat } from 'node:fs/promises';
import { ConfigError } from '../errors.js';
import { App, type GymReply, type GymRequest, type Listening } from '../http/server.js';
import { runCharts } from './charts.js';
import { renderComparePage, renderTaskSideBySide } from './compare.js';
import { html, page } from './html.js';
import { RunHealthLine } from './health-line.js';
import { LIVE_SCRIPT } from './live-script.js';
import { liveSection, parseIndexQuery, renderIndexPage, ViewRequestError } from './render-index.js';
import { renderRolloutPage } from './render-rollout.js';
import { readRow, RolloutIndex, StaleIndexError, type Source } from './rollout-index.js';
import { readRunStatus } from './status-file.js';

export const DEFAULT_PAGE_SIZE = 500;

export interface ViewServerOptions {
  rolloutsPath: string;
  /** A second run to compare with (`gym view A.jsonl B.jsonl`): its pages take `run=b`. */
  comparePath?: string;
  /** Default 127.0.0.1: trajectories may hold private data, so the viewer is local unless asked otherwise. */
  host?: string;
  /** Default 0: a free port. */
  port?: number;
  /** Rows per index page (default 500). */
  pageSize?: number;
  /** Unexpected errors while answering a request (the page shows a 500). */
  onError?: (err: unknown) => void;
}

export interface ViewServer {
  url: string;
  port: number;
  rolloutsPath: string;
  failuresPath: string;
  /** The current index of the first run (brought up to date first). */
  index(): Promise<RolloutIndex>;
  close(): Promise<void>;
}

/**
 * How long a request waits for the index to catch up before answering with the rows indexed so far (a big run's
 * first indexing goes on in the background; its pages say how far it got).
 */
const INDEX_WAIT_MS = 1000;

/** The index of one run, brought up to date with its files on each use (or as far as it got in INDEX_WAIT_MS). */
async function current(index: RolloutIndex): Promise<RolloutIndex> {
  const refreshed = index.refresh();
  refreshed.catch(() => undefined); // a failure after the wait surfaces on the next request
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, INDEX_WAIT_MS)));
  try {
    await Promise.race([refreshed, waited]);
  } finally {
    clearTimeout(timer);
  }
  if (index.size === 0 && !(await exists(index.rolloutsPath)))
    throw new ViewRequestError(410, `${index.rolloutsPath} no longer exists.`);
  return index;
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

async function requireRolloutsFile(file: string): Promise<void> {
  let info;
  try {
    info = await stat(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(
      code === 'ENOENT'
        ? `${file} does not exist. gym view shows a rollouts file written by gym eval run, e.g. gym view results/rollouts.jsonl (its failures sidecar <stem>_failures.jsonl is read too when present).`
        : `${file} cannot be read (${code ?? String(err)}); check the path and its permissions.`,
      'GYM_VIEW_FILE',
    );
  }
  if (!info.isFile())
    throw new ConfigError(
      `${file} is not a file; gym view takes a rollouts .jsonl file, e.g. results/rollouts.jsonl.`,
      'GYM_VIEW_FILE',
    );
}

const HEADERS = {
  // Defence in depth behind the escaping: no frame or external resource may load, and no script but the viewer's own.
  'content-security-policy':
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

function htmlReply(text: string, status = 200): GymReply {
  return { status, raw: text, contentType: 'text/html; charset=utf-8', headers: HEADERS };
}

function fragmentReply(text: string): GymReply {
  return { status: 200, raw: text, contentType: 'text/html; charset=utf-8', headers: HEADERS };
}

function errorPage(status: number, message: string): GymReply {
  return htmlReply(
    page(
      'gym view',
      html`<h1>${status === 404 ? 'Not found' : 'Cannot show this'}</h1><p class="error">${message}</p><p><a href="/">↑ all rollouts</a></p>`,
    ),
    status,
  );
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * On a loopback address, answer only requests addressed to a loopback name: a web page cannot then read the
 * trajectories through DNS rebinding (its requests carry the attacker's host name).
 */
function loopbackHostsOnly(req: GymRequest, next: () => Promise<GymReply>): Promise<GymReply> {
  const header = req.headers.host;
  if (header !== undefined) {
    const hostname = header.startsWith('[') ? header.slice(0, header.indexOf(']') + 1) : header.replace(/:\d+$/, '');
    if (!isLoopback(hostname))
      return Promise.resolve(
        errorPage(403, `This viewer answers only requests to a loopback address, not '${header}'.`),
      );
  }
  return next();
}

function detailTarget(query: URLSearchParams): { source: Source; line: number } {
  const file = query.get('file') ?? 'main';
  if (file !== 'main' && file !== 'failures')
    throw new ViewRequestError(400, `file must be 'main' or 'failures', not '${file}'.`);
  const lineText = query.get('line') ?? '';
  if (!/^\d+$/.test(lineText) || Number(lineText) < 1)
    throw new ViewRequestError(400, `line must be a line number (1, 2, …), not '${lineText}'.`);
  return { source: file, line: Number(lineText) };
}

async function listenOrExplain(app: App, port: number, host: string): Promise<Listening> {
  try {
    return await app.listen(port, host);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'EADDRINUSE'
        ? `port ${port} is already in use`
        : code === 'EACCES'
          ? `port ${port} needs privileges this user does not have`
          : `${host}:${port} cannot be listened on (${code ?? String(err)})`;
    throw new ConfigError(
      `gym view cannot serve: ${why}. Pick another with --port N (or --port 0 for any free port) or --host.`,
      'GYM_VIEW_LISTEN',
    );
  }
}

/** The one or two runs a viewer shows, each brought up to date with its files when a page asks for it. */
class ViewedRuns {
  constructor(
    readonly first: RolloutIndex,
    readonly second: RolloutIndex | undefined,
  ) {}

  /** The run a page's `run=` names: `a` (the default) or, when comparing, `b`. */
  async of(query: URLSearchParams): Promise<RolloutIndex> {
    const run = query.get('run') ?? 'a';
    if (run === 'a') return current(this.first);
    if (run === 'b' && this.second) return current(this.second);
    throw new ViewRequestError(
      400,
      this.second ? `run must be 'a' or 'b', not '${run}'.` : `run '${run}' does not exist: this viewer shows one run.`,
    );
  }

  async both(): Promise<[RolloutIndex, RolloutIndex]> {
    if (!this.second) throw new ViewRequestError(404, 'Comparing needs two runs: gym view A.jsonl B.jsonl.');
    return [await current(this.first), await current(this.second)];
  }
}

/** Checks the files and starts indexing them; the first refresh goes on in the background. */
async function openRuns(options: ViewServerOptions): Promise<ViewedRuns> {
  await requireRolloutsFile(options.rolloutsPath);
  if (options.comparePath !== undefined) await requireRolloutsFile(options.comparePath);
  const first = new RolloutIndex(options.rolloutsPath);
  const second = options.comparePath === undefined ? undefined : new RolloutIndex(options.comparePath);
  if (second) second.runParam = 'b';
  // The server answers at once, pages show how far indexing got.
  void first.refresh().catch((err: unknown) => options.onError?.(err));
  void second?.refresh().catch((err: unknown) => options.onError?.(err));
  return new ViewedRuns(first, second);
}

type PageBuilder = (req: GymRequest) => Promise<GymReply>;

/** A page's handler: a request the page cannot answer is an error page; an unexpected failure also goes to `onError`. */
type Answering = (build: PageBuilder) => PageBuilder;

function answering(onError: ViewServerOptions['onError']): Answering {
  return (build) => async (req) => {
    try {
      return await build(req);
    } catch (err) {
      if (err instanceof ViewRequestError) return errorPage(err.status, err.message);
      onError?.(err);
      return errorPage(500, `Unexpected error: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
}

/** The index page of a run, its live section and its charts. */
function addRunPages(app: App, runs: ViewedRuns, pageSize: number, answer: Answering): void {
  const healthLines = new Map<string, RunHealthLine>();
  const healthOf = (rolloutsPath: string): RunHealthLine => {
    let health = healthLines.get(rolloutsPath);
    if (!health) healthLines.set(rolloutsPath, (health = new RunHealthLine(rolloutsPath)));
    return health;
  };
  app.get(
    '/',
    answer(async (req) => {
      const index = await runs.of(req.query);
      const compareLink = runs.second ? html`<a href="/compare">compare A and B</a>` : undefined;
      return htmlReply(
        await renderIndexPage(index, await readRunStatus(index.rolloutsPath), parseIndexQuery(req.query), pageSize, {
          ...(compareLink ? { compareLink } : {}),
          health: await healthOf(index.rolloutsPath).line(),
        }),
      );
    }),
  );
  app.get(
    '/live',
    answer(async (req) => {
      const index = await runs.of(req.query);
      return fragmentReply(liveSection(index, await readRunStatus(index.rolloutsPath)).text);
    }),
  );
  app.get(
    '/charts',
    answer(async (req) => {
      const index = await runs.of(req.query);
      const charts = runCharts(index, await readRunStatus(index.rolloutsPath));
      return req.query.get('page') === '1'
        ? htmlReply(
            page(`Charts — ${index.rolloutsPath}`, html`<h1>Charts: <code>${index.rolloutsPath}</code></h1>${charts}`),
          )
        : fragmentReply(charts.text);
    }),
  );
}

function addAssets(app: App): void {
  // Browsers ask for it on every page; an empty answer instead of a 404 in their consoles.
  app.get('/favicon.ico', () => ({ status: 204, raw: '', contentType: 'image/x-icon', headers: HEADERS }));
  app.get('/assets/live.js', () => ({
    status: 200,
    raw: LIVE_SCRIPT,
    contentType: 'text/javascript; charset=utf-8',
    headers: HEADERS,
  }));
}

function addComparePages(app: App, runs: ViewedRuns, pageSize: number, answer: Answering): void {
  app.get(
    '/compare',
    answer(async (req) => {
      const [a, b] = await runs.both();
      return htmlReply(renderComparePage(a, b, req.query, pageSize));
    }),
  );
  app.get(
    '/compare/task',
    answer(async (req) => {
      const [a, b] = await runs.both();
      return htmlReply(await renderTaskSideBySide(a, b, req.query));
    }),
  );
}

/** One rollout's page, read back from its line on disk. */
async function rolloutPage(runs: ViewedRuns, query: URLSearchParams): Promise<GymReply> {
  const { source, line } = detailTarget(query);
  const index = await runs.of(query);
  const entry = index.find(source, line);
  if (!entry) {
    const file = source === 'main' ? index.rolloutsPath : index.failuresPath;
    throw new ViewRequestError(404, `${file} has no readable row on line ${line}.`);
  }
  try {
    return htmlReply(renderRolloutPage(index, entry, await readRow(index, entry)));
  } catch (err) {
    // The file was rewritten between the refresh and the read: the next request indexes it again.
    if (!(err instanceof StaleIndexError)) throw err;
    throw new ViewRequestError(409, `${err.message}; reload the page.`);
  }
}

export async function startViewServer(options: ViewServerOptions): Promise<ViewServer> {
  const host = options.host ?? '127.0.0.1';
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
  const runs = await openRuns(options);
  const answer = answering(options.onError);
  const app = new App();
  if (isLoopback(host)) app.use(loopbackHostsOnly);
  addRunPages(app, runs, pageSize, answer);
  addAssets(app);
  addComparePages(app, runs, pageSize, answer);
  app.get(
    '/rollout',
    answer((req) => rolloutPage(runs, req.query)),
  );
  const listening = await listenOrExplain(app, options.port ?? 0, host);
  const { first } = runs;
  return {
    url: listening.url,
    port: listening.port,
    rolloutsPath: options.rolloutsPath,
    failuresPath: first.failuresPath,
    index: async () => {
      await first.refresh();
      return first;
    },
    close: () => listening.close(),
  };
}
