/**
 * The user's verbs of the CLI (docs/client.md): `register`, `verify`, `login`, `logout`,
 * `secret create|list`, `encrypt`, `decrypt`, `encrypt-file`, `decrypt-file` — `quorumkeep/client`
 * (src/client) on the command line, so a first encrypt is a handful of commands and no crypto code.
 *
 * - The coordinator: `--url`, else `QK_URL`, else the session file's, else `quorumkeep local`'s first
 *   coordinator (http://127.0.0.1:3010).
 * - The password: `--password-stdin` (its first line), else `QK_PASSWORD`, else asked on the terminal
 *   without echo. Never a flag (a command line shows in `ps`), never stored.
 * - The session lives in a file between commands (./session-file.ts). With `--chain <id>` the payload
 *   and file verbs sign as the Web3 wallet of `QK_WALLET_KEY` instead, with the chain's latest block.
 * - Answers go to stdout (a secret id, an encrypted payload as one JSON line, a plaintext, a path);
 *   notes and progress to stderr, so commands compose in a shell.
 *
 * The client is loaded when a verb runs: `quorumkeep --help` and the node commands do not pay for it.
 */
import { resolve } from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import type * as ClientModuleType from '../client/index.ts';
import type { ApiError, ClientError, FileProgress, QuorumkeepClient, WalletOptions } from '../client/index.ts';
import { DEFAULT_COORDINATOR_URL, URL_ENV } from '../node/url-option.ts';
import { readSessionFile, removeSessionFile, sessionFilePath, writeSessionFile, type SessionFile } from './session-file.ts';

/** What the verbs need from the CLI. */
export interface ClientCommandsDeps {
  /** The environment (main.ts hands it over: only src/config and main.ts read process.env). */
  env: Readonly<Record<string, string | undefined>>;
  /** One line to stdout. */
  print(line: string): void;
}

/** The coordinator of `quorumkeep local`, when nothing else names one. */
/** Where `quorumkeep local` keeps its cluster (its `--dir` default): the outboxes are under it. */
const DEFAULT_LOCAL_DIR = './data';

/** Options every verb takes. */
interface CommonOptions {
  url?: string;
  sessionFile?: string;
}

interface WalletCliOptions extends CommonOptions {
  chain?: number;
  rpcUrl?: string;
}

/** The client module, loaded when a verb runs. */
type ClientModule = typeof ClientModuleType;

function positiveInteger(value: string): number {
  if (!/^[1-9]\d{0,15}$/.test(value)) throw new InvalidArgumentError('expected a positive integer');
  return Number(value);
}

/** `90s`, `15m`, `2h`, `7d`, or milliseconds. */
function duration(value: string): number {
  const match = /^(\d+)(ms|s|m|h|d)?$/.exec(value.trim());
  if (!match) throw new InvalidArgumentError('expected a duration such as 15m, 2h or 7d');
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] ?? 'ms']!;
  return Number(match[1]) * unit;
}

/** A one-line failure: the server's message and code, or the client's. */
function failure(verb: string, err: unknown): Error {
  const e = err as Partial<ApiError & ClientError> & Error;
  if (e?.name === 'ApiError') return new Error(`${verb}: ${e.serverMessage || e.message} (HTTP ${e.status} ${e.code})`);
  if (e?.name === 'ClientError') return new Error(`${verb}: ${e.message}`);
  return err instanceof Error ? err : new Error(String(err));
}

/** Everything stdin holds. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Ask on the terminal without echoing what is typed. */
function promptHidden(question: string): Promise<string> {
  return new Promise((resolvePrompt, reject) => {
    const input = process.stdin;
    process.stderr.write(question);
    let typed = '';
    const done = (err?: Error) => {
      input.setRawMode(false);
      input.pause();
      input.off('data', onData);
      process.stderr.write('\n');
      if (err) reject(err);
      else resolvePrompt(typed);
    };
    const onData = (data: Buffer) => {
      for (const ch of data.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done();
        if (ch === '\u0003') return done(new Error('interrupted'));
        if (ch === '\u007f' || ch === '\b') typed = [...typed].slice(0, -1).join('');
        else if (ch >= ' ') typed += ch;
      }
    };
    input.setRawMode(true);
    input.resume();
    input.on('data', onData);
  });
}

/** The password: stdin's first line, `QK_PASSWORD`, or asked (twice when `confirm`). */
async function password(options: { passwordStdin?: boolean }, env: ClientCommandsDeps['env'], confirm: boolean): Promise<string> {
  if (options.passwordStdin) {
    const line = (await readStdin()).split(/\r?\n/)[0] ?? '';
    if (line === '') throw new Error('--password-stdin: stdin holds no password');
    return line;
  }
  if (env['QK_PASSWORD']) return env['QK_PASSWORD'];
  if (!process.stdin.isTTY) throw new Error('no password: pass it on stdin with --password-stdin, or set QK_PASSWORD');
  const first = await promptHidden('password: ');
  if (confirm && (await promptHidden('password again: ')) !== first) throw new Error('the two passwords differ');
  return first;
}

/** Progress of a file verb on stderr: one rewritten line on a terminal, a line per step elsewhere. */
function progressReporter(): { onProgress: (p: FileProgress) => void; end: () => void } {
  const tty = process.stderr.isTTY === true;
  let lastLine = '';
  let lastStage = '';
  let lastPercent = -1;
  const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
  const show = (line: string, step: boolean) => {
    if (tty) {
      process.stderr.write(`\r${line.padEnd(lastLine.length)}`);
      lastLine = line;
    } else if (step) {
      process.stderr.write(line + '\n');
    }
  };
  return {
    onProgress(p) {
      const percent = p.stage === 'job' ? p.progress : p.total ? Math.floor((p.bytes / p.total) * 100) : 0;
      const line =
        p.stage === 'job'
          ? `job ${p.jobId}: ${p.status} ${p.progress}%`
          : `${p.stage} ${p.total !== undefined ? `${percent}% (${mib(p.bytes)} of ${mib(p.total)})` : mib(p.bytes)}`;
      // Off a terminal: a line when the stage changes and at each quarter.
      const step = p.stage !== lastStage || Math.floor(percent / 25) !== Math.floor(lastPercent / 25);
      if (p.stage !== lastStage) lastPercent = -1;
      lastStage = p.stage;
      lastPercent = percent;
      show(line, step);
    },
    end() {
      if (tty && lastLine !== '') process.stderr.write('\n');
    },
  };
}

/** The verbs' shared state: the client module, the session file, the coordinator's URL. */
function context(deps: ClientCommandsDeps) {
  const { env } = deps;
  const load = (): Promise<ClientModule> => import('../client/index.ts');

  async function stored(options: CommonOptions): Promise<{ path: string; file: SessionFile | undefined }> {
    const path = resolve(sessionFilePath(options.sessionFile, env));
    return { path, file: await readSessionFile(path) };
  }

  const urlOf = (options: CommonOptions, file?: SessionFile) => options.url ?? env[URL_ENV] ?? file?.url ?? DEFAULT_COORDINATOR_URL;

  /** A client without a signer (account verbs). */
  async function anonymous(options: CommonOptions): Promise<QuorumkeepClient> {
    const { createClient } = await load();
    const { file } = await stored(options).catch(() => ({ file: undefined }));
    return createClient({ url: urlOf(options, file) });
  }

  /**
   * A client signing as the stored session (or, with `--chain`, the wallet of `QK_WALLET_KEY`); runs
   * `use`, saves the session again if it learnt the server's clock, and zeroes the key.
   */
  async function signing<T>(verb: string, options: WalletCliOptions, use: (client: QuorumkeepClient) => Promise<T>): Promise<T> {
    const { createClient, restoreSession, storeSession } = await load();
    const { path, file } = await stored(options);
    let client: QuorumkeepClient;
    if (options.chain !== undefined) {
      const key = env['QK_WALLET_KEY'];
      if (!key) throw new Error(`${verb}: --chain signs as a wallet: set QK_WALLET_KEY to its private key`);
      const wallet: WalletOptions = { privateKey: key, chainId: options.chain, ...(options.rpcUrl ? { rpcUrl: options.rpcUrl } : {}) };
      client = createClient({ url: urlOf(options, file), wallet });
    } else {
      if (!file) throw new Error(`${verb}: not logged in (no session in ${path}): run quorumkeep login --email <address>`);
      client = createClient({ url: urlOf(options, file), session: restoreSession(file.session) });
    }
    try {
      const offsetBefore = client.session?.clockOffsetMs;
      const result = await use(client).catch((err: unknown) => {
        throw failure(verb, err);
      });
      if (file && client.session && client.session.clockOffsetMs !== offsetBefore) await writeSessionFile(path, { ...file, session: storeSession(client.session) });
      return result;
    } finally {
      client.close();
    }
  }

  return { load, stored, urlOf, anonymous, signing };
}

function common(command: Command): Command {
  return command
    .option('--url <url>', `coordinator base URL (default: ${URL_ENV}, the session's, or ${DEFAULT_COORDINATOR_URL})`)
    .option('--session-file <path>', 'where the session is kept (default: QK_SESSION_FILE, or ~/.config/quorumkeep/session.json)');
}

function withWallet(command: Command): Command {
  return common(command)
    .addOption(new Option('--chain <id>', 'sign as the Web3 wallet of QK_WALLET_KEY on this chain instead of the session').argParser(positiveInteger))
    .option('--rpc-url <url>', "with --chain: the chain's JSON-RPC URL (default: the coordinator's for that chain)");
}

/** Add the client verbs to the program. */
export function addClientCommands(program: Command, deps: ClientCommandsDeps): void {
  const { print, env } = deps;
  const ctx = context(deps);
  const note = (line: string) => process.stderr.write(line + '\n');

  common(program.command('register').description('create a Web2 account: a code is mailed to verify the address'))
    .requiredOption('--email <address>', 'the account email')
    .option('--password-stdin', 'read the password from stdin (else QK_PASSWORD, else asked)')
    .action(async (options: CommonOptions & { email: string; passwordStdin?: boolean }) => {
      const client = await ctx.anonymous(options);
      const secret = await password(options, env, true);
      const registered = await client.register(options.email, secret).catch((err: unknown) => {
        throw failure('register', err);
      });
      print(registered.principalId);
      note(`${registered.created ? 'registered' : 'registration renewed for'} ${options.email}: a code was mailed; next: quorumkeep verify --email ${options.email}`);
    });

  common(program.command('verify').description("verify the account's email with the mailed code (or read it from a local outbox)"))
    .requiredOption('--email <address>', 'the account email')
    .option('--code <otp>', 'the 6-digit code from the mail (else asked)')
    .option('--outbox [dir]', `read the code from the mail outboxes of a local cluster (quorumkeep local --dir; default ${DEFAULT_LOCAL_DIR})`)
    .action(async (options: CommonOptions & { email: string; code?: string; outbox?: string | true }) => {
      const client = await ctx.anonymous(options);
      let code = options.code;
      if (code === undefined && options.outbox !== undefined) {
        const { readOutboxCode } = await ctx.load();
        const dir = resolve(options.outbox === true ? DEFAULT_LOCAL_DIR : options.outbox);
        code = await readOutboxCode({ dir, email: options.email }).catch((err: unknown) => {
          throw failure('verify', err);
        });
      }
      if (code === undefined) {
        if (!process.stdin.isTTY) throw new Error('verify: give the code with --code (or --outbox for a local cluster)');
        code = (await promptHidden('code from the mail: ')).trim();
      }
      const verified = await client.verifyEmail(options.email, code).catch((err: unknown) => {
        throw failure('verify', err);
      });
      note(`verified ${options.email} (principal ${verified.principalId}); next: quorumkeep login --email ${options.email}`);
    });

  common(program.command('login').description('open a session: the account key is derived from the password, the session key is stored (mode 0600)'))
    .requiredOption('--email <address>', 'the account email')
    .option('--password-stdin', 'read the password from stdin (else QK_PASSWORD, else asked)')
    .option('--ttl <duration>', 'how long the session lasts, e.g. 15m, 8h, 7d (default: the server\'s, 15 minutes; at most 30 days)', duration)
    .action(async (options: CommonOptions & { email: string; passwordStdin?: boolean; ttl?: number }) => {
      const { createClient, storeSession } = await ctx.load();
      const { path, file } = await ctx.stored(options).catch(() => ({ path: resolve(sessionFilePath(options.sessionFile, env)), file: undefined }));
      const url = ctx.urlOf(options, file);
      const client = createClient({ url });
      try {
        const secret = await password(options, env, false);
        const session = await client.login({ email: options.email, password: secret, ...(options.ttl !== undefined ? { ttlMs: options.ttl } : {}) }).catch((err: unknown) => {
          throw failure('login', err);
        });
        await writeSessionFile(path, { url, email: options.email, session: storeSession(session) });
        note(`logged in as ${options.email} until ${new Date(session.expiresAt).toISOString()}; the session key is in ${path}`);
      } finally {
        client.close();
      }
    });

  common(program.command('logout').description('forget the stored session (its key is deleted; the session ends by itself at its expiry)')).action(async (options: CommonOptions) => {
    const path = resolve(sessionFilePath(options.sessionFile, env));
    note((await removeSessionFile(path)) ? `removed ${path}` : `no session in ${path}`);
  });

  const secret = program.command('secret').description("the session's secrets");
  common(secret.command('create').description('create a secret; prints its id'))
    .option('--json', 'print the whole answer as JSON')
    .action(async (options: CommonOptions & { json?: boolean }) => {
      const created = await ctx.signing('secret create', options, (c) => c.createSecret());
      print(options.json ? JSON.stringify(created) : String(created.secretId));
      note(`secret ${created.secretId} created (${created.status})`);
    });
  common(secret.command('list').description('list the secrets the session owns or is delegate of'))
    .option('--json', 'print the list as JSON')
    .action(async (options: CommonOptions & { json?: boolean }) => {
      const secrets = await ctx.signing('secret list', options, (c) => c.listSecrets());
      if (options.json) return print(JSON.stringify(secrets));
      for (const s of secrets) {
        const role = s.delegatePrincipalId && s.ownerPrincipalId !== s.delegatePrincipalId ? `owner ${s.ownerPrincipalId}, delegate ${s.delegatePrincipalId}` : `owner ${s.ownerPrincipalId}`;
        print(`${s.secretId}\t${s.isSyncing ? 'syncing' : 'ready'}\tcreated ${s.createdAt}\t${role}`);
      }
      if (secrets.length === 0) note('no secrets yet: quorumkeep secret create');
    });

  withWallet(program.command('encrypt').description('encrypt a text (the argument, else stdin) to a secret; prints the encrypted payload as one JSON line'))
    .argument('[text]', 'the text (default: all of stdin)')
    .requiredOption('--secret <id>', 'the secret id', positiveInteger)
    .addOption(new Option('--format <format>', 'encoding of cifer and encryptedMessage').choices(['hex', 'base64']).default('hex'))
    .action(async (text: string | undefined, options: WalletCliOptions & { secret: number; format: 'hex' | 'base64' }) => {
      const plaintext = text ?? (process.stdin.isTTY ? undefined : await readStdin());
      if (plaintext === undefined) throw new Error('encrypt: give the text as an argument or on stdin');
      const sealed = await ctx.signing('encrypt', options, (c) => c.encrypt({ secretId: options.secret, plaintext, outputFormat: options.format }));
      print(JSON.stringify(sealed));
    });

  withWallet(program.command('decrypt').description("decrypt a payload printed by encrypt (stdin, or --in); prints the text"))
    .option('--in <file>', 'read the payload from this file (default: stdin)')
    .action(async (options: WalletCliOptions & { in?: string }) => {
      const { readFile } = await import('node:fs/promises');
      const raw = options.in !== undefined ? await readFile(options.in, 'utf8') : await readStdin();
      let payload: { secretId?: unknown; cifer?: unknown; encryptedMessage?: unknown; outputFormat?: unknown };
      try {
        payload = JSON.parse(raw) as typeof payload;
      } catch {
        throw new Error('decrypt: the input is not the JSON line encrypt prints');
      }
      if (typeof payload.secretId !== 'number' || typeof payload.cifer !== 'string' || typeof payload.encryptedMessage !== 'string') {
        throw new Error('decrypt: the input lacks secretId, cifer or encryptedMessage');
      }
      const input = { secretId: payload.secretId, cifer: payload.cifer, encryptedMessage: payload.encryptedMessage, ...(payload.outputFormat === 'base64' ? { inputFormat: 'base64' as const } : {}) };
      const text = await ctx.signing('decrypt', options, (c) => c.decrypt(input));
      process.stdout.write(text);
      if (process.stdout.isTTY && !text.endsWith('\n')) process.stdout.write('\n');
    });

  withWallet(program.command('encrypt-file').description('encrypt a file to a secret into a .cifer archive (progress on stderr); prints its path'))
    .argument('<file>', 'the file to encrypt')
    .requiredOption('--secret <id>', 'the secret id', positiveInteger)
    .option('--out <file>', 'where to write the archive (default: <file>.cifer)')
    .action(async (file: string, options: WalletCliOptions & { secret: number; out?: string }) => {
      const out = resolve(options.out ?? `${file}.cifer`);
      const progress = progressReporter();
      try {
        const result = await ctx.signing('encrypt-file', options, (c) => c.encryptFile({ secretId: options.secret, path: file, out, onProgress: progress.onProgress }));
        progress.end();
        note(`job ${result.jobId}: ${result.bytes} bytes written`);
        print(result.out);
      } catch (err) {
        progress.end();
        throw err;
      }
    });

  withWallet(program.command('decrypt-file').description('decrypt a .cifer archive (progress on stderr); prints the path of the plaintext'))
    .argument('<file>', 'the .cifer archive')
    .option('--secret <id>', "the secret id (default: the archive's)", positiveInteger)
    .option('--out <file>', 'where to write the plaintext (default: the archive name without .cifer)')
    .option('--keep-job', 'keep the decrypt job on the coordinator (it is deleted after the download by default)')
    .action(async (file: string, options: WalletCliOptions & { secret?: number; out?: string; keepJob?: boolean }) => {
      const secretId = options.secret ?? (await archiveSecretId(file));
      const out = resolve(options.out ?? (file.endsWith('.cifer') ? file.slice(0, -'.cifer'.length) : `${file}.out`));
      const progress = progressReporter();
      try {
        const result = await ctx.signing('decrypt-file', options, (c) => c.decryptFile({ secretId, path: file, out, keepJob: options.keepJob ?? false, onProgress: progress.onProgress }));
        progress.end();
        note(`job ${result.jobId}: ${result.bytes} bytes written (mode 0600)`);
        print(result.out);
      } catch (err) {
        progress.end();
        throw err;
      }
    });
}

/** The secret a `.cifer` archive was made for (its metadata.json). */
async function archiveSecretId(file: string): Promise<number> {
  const [{ openCiferArchive }, { archiveLimitsOf }] = await Promise.all([import('../core/files/cifer-archive.ts'), import('../core/files/rules.ts')]);
  try {
    const archive = await openCiferArchive({ path: file }, archiveLimitsOf(Number.MAX_SAFE_INTEGER, 0));
    archive.close();
    return archive.metadata.secretId;
  } catch (err) {
    throw new Error(`decrypt-file: ${file}: ${err instanceof Error ? err.message : String(err)} (or give --secret)`);
  }
}
