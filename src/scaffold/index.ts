/**
 * `gym new environment NAME` and `gym new service NAME [--python]`: write a small skeleton into the user's project
 * that works as written — config, code, example rows, a test, and for an environment a scripted solver — so the
 * first `gym eval run` collects at mean reward 1.0 and every later change starts from something that ran. The
 * TypeScript files import only the package's public entries (`tsgym/environment`, `tsgym/service`,
 * `tsgym/testing`) and run through tsx, which the package brings, so there is no build step; nothing is ever
 * overwritten (`writer.ts`); after writing, the user is told the exact commands to run and what to edit next.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { installRoot } from '../config/roots.js';
import { UsageError } from '../errors.js';
import {
  environmentApp,
  environmentConfig,
  environmentReadme,
  environmentSolver,
  environmentTest,
} from './environment-templates.js';
import { exampleRows } from './environment-rows.js';
import { esmPackageJson } from './service-main.js';
import {
  counterService,
  counterServiceConfig,
  counterServiceReadme,
  counterServiceTest,
  pythonService,
} from './service-templates.js';
import { writeScaffold, type ScaffoldFile } from './writer.js';

export interface ScaffoldRequest {
  kind: 'environment' | 'service';
  name: string;
  /** A service in standard-library Python instead of TypeScript. */
  python?: boolean;
  /** The project root the skeleton goes into. */
  cwd: string;
}

export interface WrittenScaffold {
  /** The folder written, relative to the project root. */
  folder: string;
  /** The files written, relative to the project root. */
  files: string[];
  /** What to run and what to edit next, ready to print. */
  nextSteps: string;
}

/** It names a folder, the config's instance keys (`NAME_agent`) and, for an environment, its `impl` key. */
const NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** Where tsgym's own counter example rows and Python service are, in a checkout and in an installed package. */
const COUNTER_ROWS = 'resources_servers/example_session_state_mgmt/data/example.jsonl';
const PYTHON_SERVICE = 'examples/python-stdlib/service.py';

export function scaffold(request: ScaffoldRequest): WrittenScaffold {
  const { kind, name, cwd } = request;
  const command = `gym new ${kind} ${name}`;
  checkName(kind, name);
  const folder = kind === 'environment' ? `resources_servers/${name}` : name;
  const files = kind === 'environment' ? environmentFiles(name) : serviceFiles(name, request.python === true);
  writeScaffold(cwd, folder, files, command);
  return {
    folder,
    files: files.map((file) => `${folder}/${file.path}`),
    nextSteps: kind === 'environment' ? environmentSteps(name) : serviceSteps(name, request.python === true),
  };
}

function checkName(kind: ScaffoldRequest['kind'], name: string): void {
  if (!NAME.test(name)) {
    throw new UsageError(
      `NAME must be a plain identifier — a lowercase letter, then lowercase letters, digits or underscores, at most 64 ` +
        `(e.g. trivia or my_${kind}) — got ${JSON.stringify(name)}. It becomes a folder name and the config's keys (${kind === 'environment' ? 'NAME_resources_server, ' : ''}NAME_agent).`,
    );
  }
  if (kind === 'environment' && existsSync(path.join(installRoot(), 'resources_servers', name))) {
    throw new UsageError(
      `tsgym already ships an environment named '${name}', and gym env start runs tsgym's own over a same-named one in your project. Choose another name.`,
    );
  }
}

function environmentFiles(name: string): ScaffoldFile[] {
  return [
    { path: 'app.ts', content: environmentApp(name) },
    { path: `configs/${name}.yaml`, content: environmentConfig(name) },
    { path: 'data/example.jsonl', content: exampleRows() },
    { path: 'solver.ts', content: environmentSolver(name) },
    { path: 'app.test.ts', content: environmentTest(name) },
    { path: 'README.md', content: environmentReadme(name) },
    { path: 'package.json', content: esmPackageJson("this environment's .ts files") },
  ];
}

function serviceFiles(name: string, python: boolean): ScaffoldFile[] {
  const shared: ScaffoldFile[] = [
    { path: `configs/${name}.yaml`, content: counterServiceConfig(name, python ? 'python' : 'typescript') },
    { path: 'data/example.jsonl', content: readShipped(COUNTER_ROWS) },
    { path: 'README.md', content: counterServiceReadme(name, python ? 'python' : 'typescript') },
  ];
  if (python) return [{ path: 'service.py', content: pythonService(name, readShipped(PYTHON_SERVICE)) }, ...shared];
  return [
    { path: 'service.ts', content: counterService(name) },
    { path: 'service.test.ts', content: counterServiceTest(name) },
    ...shared,
    { path: 'package.json', content: esmPackageJson("this service's .ts files") },
  ];
}

function readShipped(relative: string): string {
  const file = path.join(installRoot(), relative);
  if (!existsSync(file))
    throw new Error(`tsgym's installation lacks ${relative} (looked in ${installRoot()}); reinstall tsgym`);
  return readFileSync(file, 'utf8');
}

function evalCommand(config: string, name: string, rows: string): string {
  return `npx gym eval run "+config_paths=[${config}]" +agent_name=${name}_agent +input_jsonl_fpath=${rows} +output_jsonl_fpath=results/${name}.jsonl`;
}

function resultsLine(name: string): string {
  return [
    `     The rollouts land in results/${name}.jsonl (expect mean reward 1.0), failed attempts in results/${name}_failures.jsonl,`,
    `     metrics in results/${name}_aggregate_metrics.json. Browse them: npx gym view results/${name}.jsonl`,
  ].join('\n');
}

function environmentSteps(name: string): string {
  const dir = `resources_servers/${name}`;
  return [
    'Run it, from this folder:',
    '  1. In one terminal, start the scripted solver (an agent service on http://127.0.0.1:9000):',
    `       node --import tsx ${dir}/solver.ts`,
    '  2. In another, collect the example rows (gym starts the environment and the remote agent, and stops them at the end):',
    `       ${evalCommand(`${dir}/configs/${name}.yaml`, name, `${dir}/data/example.jsonl`)}`,
    resultsLine(name),
    `  3. Test the environment on its own: node --import tsx --test ${dir}/app.test.ts`,
    '',
    'Edit next:',
    `  - ${dir}/app.ts: the session state, the tools and verify.`,
    `  - ${dir}/data/example.jsonl: your tasks (each row's tools must equal environment.toolSchemas; app.test.ts checks).`,
    `  - Your agent: point agent_base_url in ${dir}/configs/${name}.yaml at it, or grow solve in ${dir}/solver.ts.`,
    `  More in ${dir}/README.md.`,
    '',
  ].join('\n');
}

function serviceSteps(name: string, python: boolean): string {
  const start = python ? `python3 ${name}/service.py --port 9000` : `node --import tsx ${name}/service.ts`;
  return [
    'Run it, from this folder:',
    `  1. In one terminal, start the service (it listens on http://127.0.0.1:9000):`,
    `       ${start}`,
    "  2. In another, collect the counter tasks (gym starts tsgym's counter environment and the remote agent, and stops them at the end):",
    `       ${evalCommand(`${name}/configs/${name}.yaml`, name, `${name}/data/example.jsonl`)}`,
    resultsLine(name),
    ...(python ? [] : [`  3. Test the service on its own: node --import tsx --test ${name}/service.test.ts`]),
    '',
    'Edit next:',
    `  - The brain: ${python ? 'decide' : 'solve'} in ${name}/service.${python ? 'py' : 'ts'}; call your model with the conversation and the tools.`,
    '  - Check the service against the contract: npx gym agent check http://127.0.0.1:9000',
    `  - Another environment: change the resources-server block in ${name}/configs/${name}.yaml, and the rows.`,
    `  More in ${name}/README.md.`,
    '',
  ].join('\n');
}
