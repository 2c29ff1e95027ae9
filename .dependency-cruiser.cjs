// The layering, checked in CI (`npm run lint`): each entry of LAYERS may import only from itself and the entries
// before it, so every arrow points down and no two folders can form a circle. Tests (`*.test.ts`), test/support/ and
// bench/ sit on top and may import anything; nothing else may import them. Entries are path prefixes (regexes)
// relative to the repository root. Read docs/layout.md for what each layer is.
const LAYERS = [
  ['src/errors\\.ts', 'src/bounded-json/', 'src/seeded-random\\.ts', 'src/generator-args\\.ts', 'src/main-module\\.ts'],
  // One JSON object per line on request (--log-format json): below everything that logs.
  ['src/logging/'],
  ['src/contract/'],
  ['src/http/'],
  ['src/config/'],
  ['src/runfiles/'],
  ['src/metrics/'],
  ['src/tracing/'],
  ['src/prometheus/'],
  ['src/counter/'],
  ['src/server/'],
  // The model server (responses_api_models/): the relay to an upstream model and the per-rollout call records, whose
  // shapes the rollout engine above attaches to rows.
  ['src/model-server/'],
  // Training rows from captured model calls: prefix_merging over a rollout's token ids, projected onto its output.
  ['src/training/'],
  // The rollout engine (seed → loop of service call and tools → verify → row) and its /v1/responses transport:
  // the remote agent serves it, `gym agent check` calls services through the same transport.
  ['src/rollout/'],
  // The two kits and the test doubles: each stands on the layers below, never on one another.
  ['src/service/'],
  ['src/environment/'],
  ['src/testing/'],
  // Plug-ins: environments, agents and the example services users copy.
  ['resources_servers/'],
  ['responses_api_models/'],
  ['responses_api_agents/'],
  ['examples/'],
  // The engine behind the CLI's verbs.
  ['src/supervisor/'],
  ['src/check/'],
  ['src/scaffold/'],
  // Rollout health over a run's files: the collector and the viewer report it.
  ['src/health/'],
  ['src/collect/'],
  ['src/profile/'],
  ['src/compare/'],
  ['src/queue/'],
  ['src/view/'],
  ['src/explain/'],
  ['src/cli/'],
];

const TEST = '(\\.test\\.ts$|^test/|^bench/)';
const alt = (paths) => `^(${paths.join('|')})`;

const forbidden = [
  {
    name: 'no-circular',
    comment: 'A circle of imports makes both sides load in an order nobody chose.',
    severity: 'error',
    from: {},
    to: { circular: true },
  },
  {
    name: 'no-test-code-in-product',
    comment: 'Test support is kept out of the published package, so product code may not import it.',
    severity: 'error',
    from: { pathNot: TEST },
    to: { path: TEST },
  },
  {
    name: 'no-unlayered-module',
    comment: 'Every product module belongs to a layer: add a new folder to LAYERS in .dependency-cruiser.cjs.',
    severity: 'error',
    from: { pathNot: [TEST, alt(LAYERS.flat()), '^bin/', '^eslint\\.config\\.js$'] },
    to: {},
  },
];

LAYERS.forEach((layer, index) => {
  const above = LAYERS.slice(index + 1).flat();
  if (above.length === 0) return;
  forbidden.push({
    name: `no-upward-import-from-${layer[0].replace(/[\\/.]+/g, '-').replace(/-$/, '')}`,
    comment: 'A layer imports only from itself and the layers below it (LAYERS in .dependency-cruiser.cjs).',
    severity: 'error',
    from: { path: alt(layer), pathNot: TEST },
    to: { path: alt(above) },
  });
});

module.exports = {
  forbidden,
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
