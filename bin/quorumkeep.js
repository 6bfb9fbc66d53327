#!/usr/bin/env node
// Runs the built CLI (dist/, made by `npm pack`), else src/main.ts in a source checkout (Node >= 24 strips types).
import { existsSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';

// package.json "engines"; checked before anything is loaded, so an older Node gets one line, not a stack trace.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 24 || (major === 24 && minor < 7)) {
  process.stderr.write(`quorumkeep needs Node.js 24.7 or later; this is ${process.version} (${process.execPath})\n`);
  process.exit(2);
}
await import(existsSync(new URL('../dist/main.js', import.meta.url)) ? '../dist/main.js' : '../src/main.ts');
