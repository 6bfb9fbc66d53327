import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // Our tests import the public harness and client by their package names, resolved to the TypeScript source.
    alias: {
      'quorumkeep/testing': fileURLToPath(new URL('./src/testing/index.ts', import.meta.url)),
      'quorumkeep/client': fileURLToPath(new URL('./src/client/index.ts', import.meta.url)),
    },
  },
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration tests start real clusters: keep files in separate forks, a few at a time (2 cores).
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        // Unit tests share their forks' module graph instead of importing it afresh for every file:
        // the import was two thirds of their time (the whole set 67 s isolated, 33 s not). Each
        // cluster test keeps a fresh fork, as what one leaves running must not reach the next.
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false },
      },
      {
        extends: true,
        // Everything else, each file in a fresh fork.
        test: { name: 'cluster', include: ['test/**/*.test.ts'], exclude: ['test/unit/**', '**/node_modules/**'] },
      },
    ],
  },
});
