/**
 * `gym view`'s server: the index page and one page per rollout, served by tsgym's own `App`. The index is rebuilt
 * when either file changes (so a run that is still writing can be watched by reloading), and only ever from disk:
 * rows are read back one at a time for the detail page.
 */
import { stat } from 'node:fs/promises';
import { ConfigError } from '../errors.js';
import { failuresPathFor } from '../collect/paths.js';
import { App, type GymReply, type GymRequest, type Listening } from '../http/server.js';
import { html, page } from './html.js';
import { parseIndexQuery, renderIndexPage, ViewRequestError } from './render-index.js';
import { renderRolloutPage } from './render-rollout.js';
import { indexRun, readRow, sameStamp, stampOf, StaleIndexError, type FileStamp, type RolloutIndex, type Source } from './rollout-index.js';

export const DEFAULT_PAGE_SIZE = 500;

export interface ViewServerOptions {
  rolloutsPath: string;
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
  /** The current index (rebuilt first if a file changed). */
  index(): Promise<RolloutIndex>;
  close(): Promise<void>;
}

/** The index of the files as they are now, rebuilt only when one of them changed since the last build. */
class LiveIndex {
  private built: { index: RolloutIndex; stamps: [FileStamp | undefined, FileStamp | undefined] } | undefined;
  private building: Promise<RolloutIndex> | undefined;

  constructor(
    private readonly rolloutsPath: string,
    private readonly failuresPath: string,
  ) {}

  async get(force = false): Promise<RolloutIndex> {
    const stamps: [FileStamp | undefined, FileStamp | undefined] = [await stampOf(this.rolloutsPath), await stampOf(this.failuresPath)];
    if (!force && this.built && sameStamp(this.built.stamps[0], stamps[0]) && sameStamp(this.built.stamps[1], stamps[1])) {
      return this.built.index;
    }
    if (stamps[0] === undefined) throw new ViewRequestError(410, `${this.rolloutsPath} no longer exists.`);
    this.building ??= indexRun(this.rolloutsPath, stamps[1] !== undefined)
      .then((index) => {
        this.built = { index, stamps };
        return index;
      })
      .finally(() => {
        this.building = undefined;
      });
    return this.building;
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
  if (!info.isFile()) throw new ConfigError(`${file} is not a file; gym view takes a rollouts .jsonl file, e.g. results/rollouts.jsonl.`, 'GYM_VIEW_FILE');
}

const HEADERS = {
  // Defence in depth behind the escaping: no script, frame or external resource may run or load.
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

function htmlReply(text: string, status = 200): GymReply {
  return { status, raw: text, contentType: 'text/html; charset=utf-8', headers: HEADERS };
}

function errorPage(status: number, message: string): GymReply {
  return htmlReply(page('gym view', html`<h1>${status === 404 ? 'Not found' : 'Cannot show this'}</h1><p class="error">${message}</p><p><a href="/">↑ all rollouts</a></p>`), status);
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
    if (!isLoopback(hostname)) return Promise.resolve(errorPage(403, `This viewer answers only requests to a loopback address, not '${header}'.`));
  }
  return next();
}

function detailTarget(query: URLSearchParams): { source: Source; line: number } {
  const file = query.get('file') ?? 'main';
  if (file !== 'main' && file !== 'failures') throw new ViewRequestError(400, `file must be 'main' or 'failures', not '${file}'.`);
  const lineText = query.get('line') ?? '';
  if (!/^\d+$/.test(lineText) || Number(lineText) < 1) throw new ViewRequestError(400, `line must be a line number (1, 2, …), not '${lineText}'.`);
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
    throw new ConfigError(`gym view cannot serve: ${why}. Pick another with --port N (or --port 0 for any free port) or --host.`, 'GYM_VIEW_LISTEN');
  }
}

export async function startViewServer(options: ViewServerOptions): Promise<ViewServer> {
  const { rolloutsPath } = options;
  const host = options.host ?? '127.0.0.1';
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
  await requireRolloutsFile(rolloutsPath);
  const failuresPath = failuresPathFor(rolloutsPath);
  const live = new LiveIndex(rolloutsPath, failuresPath);
  await live.get();

  const answer = (build: (req: GymRequest) => Promise<GymReply>) => async (req: GymRequest): Promise<GymReply> => {
    try {
      return await build(req);
    } catch (err) {
      if (err instanceof ViewRequestError) return errorPage(err.status, err.message);
      options.onError?.(err);
      return errorPage(500, `Unexpected error: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  const app = new App();
  if (isLoopback(host)) app.use(loopbackHostsOnly);
  app.get(
    '/',
    answer(async (req) => htmlReply(renderIndexPage(await live.get(), parseIndexQuery(req.query), pageSize))),
  );
  app.get(
    '/rollout',
    answer(async (req) => {
      const { source, line } = detailTarget(req.query);
      for (let attempt = 0; ; attempt++) {
        const index = await live.get(attempt > 0);
        const entry = index.find(source, line);
        if (!entry) {
          const file = source === 'main' ? rolloutsPath : failuresPath;
          throw new ViewRequestError(404, `${file} has no readable row on line ${line}.`);
        }
        try {
          return htmlReply(renderRolloutPage(index, entry, await readRow(index, entry)));
        } catch (err) {
          // The file was rewritten between the index and the read: index it again once.
          if (!(err instanceof StaleIndexError)) throw err;
          if (attempt > 0) throw new ViewRequestError(409, `${err.message}; reload the page.`);
        }
      }
    }),
  );
  const listening = await listenOrExplain(app, options.port ?? 0, host);
  return {
    url: listening.url,
    port: listening.port,
    rolloutsPath,
    failuresPath,
    index: () => live.get(),
    close: () => listening.close(),
  };
}
