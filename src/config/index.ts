/** Node configuration: schema, loader (defaults ← file ← env ← flags), cluster file, redacted view, rules for announced addresses. */
export * from './schema.ts';
export * from './loader.ts';
export * from './cluster-file.ts';
export * from './redact.ts';
export * from './addresses.ts';
