/**
 * src/log: which format `log.format` means, the held destination `quorumkeep local` writes through
 * until its banner is out, and the process's warnings as log lines.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { holdLines, logProcessWarnings, resolveLogFormat } from '../../../src/log/index.ts';
import { captureLogger } from '../../utils/log.ts';

describe('resolveLogFormat', () => {
  it('auto is pretty on a terminal and JSON otherwise; an explicit format is kept', () => {
    expect(resolveLogFormat('auto', true)).toBe('pretty');
    expect(resolveLogFormat('auto', false)).toBe('json');
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
  });
});

describe('holdLines', () => {
  it('holds lines until released, then writes them in order and later ones straight through', () => {
    const written: string[] = [];
    const held = holdLines({ write: (line: string) => void written.push(line) });
    held.write('a\n');
    held.write('b\n');
    expect(written).toEqual([]);
    held.release();
    held.write('c\n');
    held.release();
    expect(written).toEqual(['a\n', 'b\n', 'c\n']);
  });

  it('lets its lines out once it holds its maximum, so that none is lost', () => {
    const written: string[] = [];
    const held = holdLines({ write: (line: string) => void written.push(line) }, 3);
    for (const line of ['1', '2']) held.write(line);
    expect(written).toEqual([]);
    for (const line of ['3', '4']) held.write(line);
    expect(written).toEqual(['1', '2', '3', '4']);
  });
});

describe('logProcessWarnings', () => {
  it('logs each warning at warn with its name, code and text, and removes the printer there was', () => {
    const source = new EventEmitter();
    const printed: Error[] = [];
    source.on('warning', (w: Error) => printed.push(w));
    const { logger, lines } = captureLogger();
    logProcessWarnings(source, logger);

    source.emit('warning', Object.assign(new Error('this is old'), { name: 'DeprecationWarning', code: 'DEP0005' }));
    source.emit('warning', Object.assign(new Error('started without a setting'), { name: 'QuorumkeepProcessSettings' }));
    expect(printed).toEqual([]);
    expect(lines()).toEqual([
      expect.objectContaining({ level: 40, msg: 'process warning', warning: 'DeprecationWarning', code: 'DEP0005', detail: 'this is old' }),
      expect.objectContaining({ level: 40, msg: 'process warning', warning: 'QuorumkeepProcessSettings', detail: 'started without a setting' }),
    ]);
    expect(lines()[1]).not.toHaveProperty('code');
  });
});
