/** Node configuration: schema, loader (defaults ← file ← env ← flags), cluster file, redacted view. */
export * from './schema.ts';
export * from './loader.ts';
export * from './cluster-file.ts';
export * from './redact.ts';
