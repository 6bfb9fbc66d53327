/**
 * The module graph of src/ has no import cycles (issue 16) — type-only imports included: a cycle of
 * types still ties the files' layering together, and becomes a load-order problem the day one of its
 * imports carries a value. Folder boundaries themselves are lint rules (eslint.config.js).
 *
 * The graph is read with the TypeScript parser: every `import … from`, `import type …`,
 * `export … from`, `import x = require(…)`, `import('…')` and `typeof import('…')` of every .ts file
 * under src/, relative specifiers resolved to files. Package imports are not edges.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SRC = join(ROOT, 'src');

/** One import of a file: where it points, and whether it only carries types or is loaded on demand. */
interface Edge {
  to: string;
  kind: 'value' | 'type' | 'dynamic';
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Module specifiers of one file, with their kind. */
function specifiers(file: string): Array<{ specifier: string; kind: Edge['kind'] }> {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: Array<{ specifier: string; kind: Edge['kind'] }> = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      // Only `import type` is erased: `import { type A }` still loads the module (verbatimModuleSyntax,
      // node's type stripping).
      found.push({ specifier: node.moduleSpecifier.text, kind: node.importClause?.isTypeOnly ? 'type' : 'value' });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ specifier: node.moduleSpecifier.text, kind: node.isTypeOnly ? 'type' : 'value' });
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) && ts.isStringLiteral(node.moduleReference.expression)) {
      found.push({ specifier: node.moduleReference.expression.text, kind: node.isTypeOnly ? 'type' : 'value' });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ specifier: node.argument.literal.text, kind: 'type' });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) {
      found.push({ specifier: node.arguments[0].text, kind: 'dynamic' });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The file a relative specifier names (`./x.ts`, `./x.js` for `./x.ts`, `./x`, `./dir`), or undefined. */
function resolveRelative(from: string, specifier: string, files: ReadonlySet<string>): string | undefined {
  const base = resolve(dirname(from), specifier);
  const candidates = [base, base.replace(/\.(m|c)?js$/, '.$1ts'), `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((candidate) => files.has(candidate));
}

/** src/ as a graph: file → its imports of other src files. */
function buildGraph(): Map<string, Edge[]> {
  const files = sourceFiles(SRC);
  const known = new Set(files);
  const graph = new Map<string, Edge[]>();
  for (const file of files) {
    const edges: Edge[] = [];
    for (const { specifier, kind } of specifiers(file)) {
      if (!specifier.startsWith('.')) continue;
      const to = resolveRelative(file, specifier, known);
      if (to !== undefined) edges.push({ to, kind });
    }
    graph.set(file, edges);
  }
  return graph;
}

/** A cycle found: one concrete path through it, and every file of its strongly connected component. */
interface Cycle {
  path: Array<{ file: string; kind?: Edge['kind'] }>;
  component: string[];
}

/** Strongly connected components with a cycle (Tarjan), each with one concrete cycle path. */
function findCycles(graph: ReadonlyMap<string, readonly Edge[]>): Cycle[] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  // Iterative, so a deep import chain cannot overflow the call stack.
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; next: number }> = [{ node: start, next: 0 }];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const edges = graph.get(frame.node) ?? [];
      if (frame.next < edges.length) {
        const to = edges[frame.next++]!.to;
        if (!index.has(to)) {
          index.set(to, counter);
          low.set(to, counter++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, next: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        const selfLoop = component.length === 1 && (graph.get(frame.node) ?? []).some((edge) => edge.to === frame.node);
        if (component.length > 1 || selfLoop) components.push(component);
      }
    }
  }
  return components.map((component) => ({ path: cyclePath(graph, new Set(component)), component: component.sort() }));
}

/** One cycle inside a strongly connected component: a shortest path from its first file back to it. */
function cyclePath(graph: ReadonlyMap<string, readonly Edge[]>, component: ReadonlySet<string>): Array<{ file: string; kind?: Edge['kind'] }> {
  const start = [...component].sort()[0]!;
  const cameFrom = new Map<string, { from: string; kind: Edge['kind'] }>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const edge of graph.get(node) ?? []) {
      if (!component.has(edge.to) || cameFrom.has(edge.to)) continue;
      cameFrom.set(edge.to, { from: node, kind: edge.kind });
      if (edge.to === start) queue.length = 0;
      else queue.push(edge.to);
    }
  }
  const path: Array<{ file: string; kind?: Edge['kind'] }> = [{ file: start }];
  let node = start;
  do {
    const step = cameFrom.get(node)!;
    path[0]!.kind = step.kind;
    path.unshift({ file: step.from });
    node = step.from;
  } while (node !== start);
  return path;
}

/** `a.ts → b.ts →(type) a.ts`, paths relative to the repository, then the rest of its component. */
function describeCycle({ path, component }: Cycle): string {
  const text = path.map(({ file, kind }, i) => (i === 0 ? '' : kind === 'value' ? ' → ' : ` →(${kind}) `) + relative(ROOT, file)).join('');
  const others = component.filter((file) => !path.some((step) => step.file === file));
  return others.length === 0 ? text : `${text}
    (the same cycle set also holds ${others.map((file) => relative(ROOT, file)).join(', ')})`;
}

describe('src/ import graph', () => {
  const graph = buildGraph();

  it('reads the whole of src/', () => {
    // A parser that found nothing would make the cycle check pass vacuously.
    expect(graph.size).toBeGreaterThan(50);
    expect([...graph.values()].reduce((sum, edges) => sum + edges.length, 0)).toBeGreaterThan(graph.size);
  });

  it('has no import cycles, type-only imports included', () => {
    const cycles = findCycles(graph).map(describeCycle);
    expect(cycles, `import cycles in src/ (→ value import, →(type) type-only, →(dynamic) import()):\n  ${cycles.join('\n  ')}`).toEqual([]);
  });

  it('reports the largest core service (information only)', () => {
    const services = [...graph.keys()]
      .filter((file) => relative(SRC, file).startsWith('core/') && file.endsWith('/service.ts'))
      .map((file) => ({ file: relative(ROOT, file), lines: readFileSync(file, 'utf8').split('\n').length }))
      .sort((a, b) => b.lines - a.lines);
    const largest = services[0];
    if (largest) console.log(`largest core service: ${largest.file} (${largest.lines} lines)`);
  });
});
