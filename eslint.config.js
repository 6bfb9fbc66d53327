import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// ---------------------------------------------------------------------------------------------
// Folder boundaries (issue 16): which src folders a folder may import, and which folder owns which
// library. Both apply to src/ only: tests and scripts import what they check or build (e.g. tests
// verify with @noble/*, level and viem directly; scripts/build-contract.ts uses viem).
// The import graph of src/ has no cycles either: test/unit/structure/imports.test.ts.

/**
 * Layers: the top-level src folders each of these folders may import besides itself; anything else
 * under src/ (other folders, src/index.ts, src/main.ts) is refused. Imports are matched as written
 * (the rule does not resolve paths), so the rule is built per directory depth: from
 * `src/core/a/b.ts`, `../../<folder>/…` is the only way to another folder.
 */
const LAYERS = {
  core: {
    allow: ['crypto', 'errors', 'log', 'metrics'],
    why: 'src/core declares ports that the other folders implement; it imports only crypto, errors, log and metrics',
  },
  crypto: {
    allow: [],
    why: 'src/crypto is a leaf: pure functions that import nothing else from src',
  },
  http: {
    allow: ['core', 'crypto', 'errors', 'log', 'metrics'],
    why: 'src/http calls core services; src/node wires cluster, store, config and the rest in (HTTP options are its own types)',
  },
};

/** Layer exceptions, each one file and one import: `allow` is the exact specifier. None today. */
const LAYER_EXCEPTIONS = [];

/** Deepest src file the layer rules cover (src/core/a/b.ts is depth 2). */
const MAX_DEPTH = 5;

/**
 * Libraries one part of src owns: no other src file imports them (each owner's header says "the
 * only importer of …"). `owners` are disjoint globs.
 */
const OWNED_LIBRARIES = [
  { regex: '^(level|classic-level|abstract-level)(/|$)', owners: ['src/store/**'], what: 'level (LevelDB)' },
  {
    regex: '^(libp2p|@libp2p/[^/]+|@chainsafe/libp2p-[^/]+|@multiformats/[^/]+|it-length-prefixed-stream)(/|$)',
    owners: ['src/cluster/**'],
    what: 'libp2p and its modules',
  },
  { regex: '^(koa|@koa/[^/]+|@fastify/busboy)(/|$)', owners: ['src/http/**'], what: 'koa, @koa/* and @fastify/busboy' },
  { regex: '^viem(/|$)', owners: ['src/evm/**'], what: 'viem' },
  { regex: '^nodemailer(/|$)', owners: ['src/mail/**'], what: 'nodemailer' },
  { regex: '^@noble/[^/]+(/|$)', owners: ['src/crypto/**'], what: '@noble/*' },
  { regex: '^hash-wasm(/|$)', owners: ['src/crypto/hash.ts'], what: 'hash-wasm' },
  { regex: '^prom-client(/|$)', owners: ['src/metrics/**'], what: 'prom-client' },
  { regex: '^yauzl(/|$)', owners: ['src/core/files/cifer-archive.ts'], what: 'yauzl' },
];

const escapeRegex = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** src files import each other by relative paths. */
const SELF_IMPORT = { regex: '^quorumkeep(/|$)', caseSensitive: true, message: 'src imports src by relative paths, never through the package name.' };

/** `no-restricted-imports` configs of the layers: one per layer and directory depth, then the exceptions. */
function layerConfigs() {
  const configs = [];
  const pattern = (folder, depth, allowedSpecifier) => {
    const { allow, why } = LAYERS[folder];
    const exception = allowedSpecifier ? `(?!${escapeRegex(allowedSpecifier)}$)` : '';
    return {
      // `depth` times `../` leads to src/: what follows must be this folder or an allowed one.
      regex: `^${exception}(\\.\\./){${depth}}(?!(${[folder, ...allow].join('|')})/)`,
      caseSensitive: true,
      message: `${why}.`,
    };
  };
  for (const folder of Object.keys(LAYERS)) {
    for (let depth = 1; depth <= MAX_DEPTH; depth++) {
      configs.push({
        files: [`src/${folder}/${'*/'.repeat(depth - 1)}*.ts`],
        rules: { 'no-restricted-imports': ['error', { patterns: [pattern(folder, depth), SELF_IMPORT] }] },
      });
    }
  }
  for (const { file, allow } of LAYER_EXCEPTIONS) {
    const [, folder, ...rest] = file.split('/');
    configs.push({ files: [file], rules: { 'no-restricted-imports': ['error', { patterns: [pattern(folder, rest.length, allow), SELF_IMPORT] }] } });
  }
  return configs;
}

/**
 * `@typescript-eslint/no-restricted-imports` configs of the owned libraries (a rule of its own, so
 * these never override the layers' `no-restricted-imports`): all of src refuses every owned library,
 * then each owner gets the list without its own.
 */
/** The owned libraries' patterns, all but `except`'s. */
function libraryPatterns(except) {
  return OWNED_LIBRARIES.filter((library) => library !== except).map(({ regex, owners, what }) => ({
    regex,
    caseSensitive: true,
    message: `Only ${owners.join(', ')} imports ${what}; use what it exports.`,
  }));
}

function libraryConfigs() {
  return [
    { files: ['src/**/*.ts'], rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: libraryPatterns(undefined) }] } },
    ...OWNED_LIBRARIES.map((library) => ({
      files: library.owners,
      rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: libraryPatterns(library) }] },
    })),
  ];
}

/**
 * src/client is what users import as `quorumkeep/client`: it speaks to a cluster over HTTP and signs
 * with src/crypto, and loads none of a node's code — but its answers are the server's wire views, so
 * it may import their *types* from src/core. One `@typescript-eslint/no-restricted-imports` config
 * (it alone knows type imports) holding the owned libraries' patterns too, since a later config of a
 * rule replaces an earlier one's options.
 */
function clientConfig() {
  const why = "src/client loads none of a node's code: it imports src/crypto, and only types from src/core";
  return {
    files: ['src/client/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            ...libraryPatterns(undefined),
            { regex: '^\\.\\./(?!(client|crypto|core)/)', caseSensitive: true, message: `${why}.` },
            { regex: '^\\.\\./core/', caseSensitive: true, allowTypeImports: true, message: `${why}.` },
            SELF_IMPORT,
          ],
        },
      ],
    },
  };
}

export default tseslint.config(
  // test/vendor: third-party code kept byte for byte (test/vendor/cifer-sdk/README.md).
  { ignores: ['node_modules', 'dist', 'data', 'coverage', 'test-artifacts', 'test/vendor'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-syntax': ['error', { selector: "MemberExpression[object.name='process'][property.name='env']", message: 'process.env is read only in src/config' }],
    },
  },
  {
    files: ['src/config/**', 'test/**', 'scripts/**', 'src/testing/**', 'examples/**'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  ...layerConfigs(),
  ...libraryConfigs(),
  clientConfig(),
);
