// Lint rules for the whole tree: typescript-eslint's type-checked recommended set (floating and misused promises,
// unsafe `any` flows, unbound methods…), with `any` and unused code as errors. Unused *exports* are knip's job
// (knip.json); import layering is dependency-cruiser's (.dependency-cruiser.cjs).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly' },
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // node:test's `test()` and `describe()` return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] },
          ],
        },
      ],
      'no-control-regex': 'off',
    },
  },
  {
    // The engine and the remote agent read as named steps: no function over 100 lines (tests are exempt).
    files: ['src/**/*.ts', 'responses_api_agents/**/*.ts', 'responses_api_models/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 100 }] },
  },
  {
    // Plain JavaScript (the executable, this file, CommonJS configs) is outside the TypeScript project.
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // CommonJS config files (.dependency-cruiser.cjs) run under Node's CommonJS loader.
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'readonly', require: 'readonly' } },
  },
);
