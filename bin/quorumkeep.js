#!/usr/bin/env node
// Runs the built CLI (dist/, from `npm run build`), else src/main.ts in a source checkout (Node >= 24 strips types).
import { existsSync } from 'node:fs';
import { URL } from 'node:url';
await import(existsSync(new URL('../dist/main.js', import.meta.url)) ? '../dist/main.js' : '../src/main.ts');
