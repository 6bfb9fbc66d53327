/** After `npm pack`: remove the build scripts/prepack.ts made, so a source checkout runs src/ (bin/quorumkeep.js). */
import { rmSync } from 'node:fs';
import { join } from 'node:path';

rmSync(join(import.meta.dirname, '..', 'dist'), { recursive: true, force: true });
