/** The node's storage (the only importer of `level`). */
export * from './level-store.ts';
export * from './snapshot.ts';
