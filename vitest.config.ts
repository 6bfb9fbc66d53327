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
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration tests start real clusters: keep files in separate forks, a few at a time (2 cores).
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
  },
});
