/**
 * `quorumkeep member status|recover|replace` (docs/operations.md, "Lose a disk", "Replace a member's
 * identity"; `replace` is ./member-replace.ts): the operator's side of
 * share recovery, over a coordinator's admin API (`GET /admin/members`,
 * `POST /admin/members/:slot/recover`, behind the admin bearer token).
 */
import { Option, type Command } from 'commander';
import { z } from 'zod';
import { urlOption } from './url-option.ts';

/** Deadline of one admin call, ms. */
const CALL_TIMEOUT_MS = 10_000;

const memberSchema = z.object({
  slot: z.number(),
  nodeId: z.string(),
  nodeAddress: z.string(),
  status: z.enum(['recovering', 'active']),
  since: z.number().nullable(),
  reachable: z.boolean(),
  shares: z.object({ expected: z.number(), held: z.number(), missing: z.number(), pending: z.number() }).nullable().optional(),
});
const secretRefSchema = z.object({ chainId: z.number(), secretId: z.number() });
type Member = z.infer<typeof memberSchema>;

interface AdminOptions {
  url: string;
  token?: string;
}

/** Call the coordinator's admin API; throws with a one-line reason. */
async function call(options: AdminOptions, method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
  const token = options.token ?? '';
  if (token === '') throw new Error('member: the admin token is needed (--token or QK_ADMIN_TOKEN)');
  const url = `${options.url.replace(/\/+$/, '')}${path}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${token}`, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
  } catch (err) {
    throw new Error(`member: cannot reach ${url} (${err instanceof Error && err.name === 'TimeoutError' ? 'timed out' : ((err as Error).cause as NodeJS.ErrnoException | undefined)?.code ?? (err as Error).message})`);
  }
  const answer = (await response.json().catch(() => ({}))) as { error?: string };
  if (!response.ok) throw new Error(`member: ${url} answered HTTP ${response.status}${answer.error ? `: ${answer.error}` : ''}`);
  return answer;
}

function line(m: Member): string {
  const since = m.since === null ? '' : `  since ${new Date(m.since).toISOString()}`;
  const shares = m.shares ? `  shares ${m.shares.held}/${m.shares.expected}${m.shares.missing + m.shares.pending > 0 ? ` (${m.shares.missing + m.shares.pending} MISSING)` : ''}` : '';
  return `  slot ${String(m.slot).padStart(2)}  ${m.nodeId}  ${m.nodeAddress}  ${m.status.toUpperCase()}  ${m.reachable ? 'reachable' : 'UNREACHABLE'}${shares}${since}`;
}

/** `--token`, or the environment's `QK_ADMIN_TOKEN` (read by commander). */
const tokenOption = () => new Option('--token <token>', 'admin bearer token').env('QK_ADMIN_TOKEN');

/** Add `member status` and `member recover` to the program (errors exit 2, through the CLI's handler). */
export function addMemberCommands(program: Command, print: (text: string) => void): void {
  const member = program.command('member').description("member slots: status, recovering a member's shares after it lost its data, replacing a lost identity");
  member
    .command('status')
    .description('each slot: status (active or recovering), reachability and shares held/expected, as a coordinator sees them (exit 1 while a slot recovers, lacks shares or is unreachable)')
    .addOption(urlOption())
    .addOption(tokenOption())
    .action(async (options: AdminOptions) => {
      const body = z.object({ members: z.array(memberSchema) }).parse(await call(options, 'GET', '/admin/members'));
      for (const m of body.members) print(line(m));
      // Exit 1 while a slot is still recovering, lacks shares or is down: scripts can wait on it.
      process.exitCode = body.members.some((m) => m.status === 'recovering' || !m.reachable || (m.shares?.missing ?? 0) + (m.shares?.pending ?? 0) > 0) ? 1 : 0;
    });
  member
    .command('recover')
    .description('mark a slot recovering: its node, started on its own keys with an empty data dir, rebuilds its shares from threshold helpers')
    .requiredOption('--slot <n>', 'member slot')
    .addOption(urlOption())
    .addOption(tokenOption())
    .action(async (options: AdminOptions & { slot: string }) => {
      const body = z.object({ member: memberSchema }).parse(await call(options, 'POST', `/admin/members/${encodeURIComponent(options.slot)}/recover`));
      print(line(body.member));
      print('The member marks itself active when it holds every share again: watch `quorumkeep member status` (exit 0 when no slot is recovering).');
    });
  member
    .command('acknowledge-loss')
    .description('record that secrets held by fewer than threshold members are lost, so the members stop recovering them and the alarms clear (docs/operations.md, "Data safety")')
    .addOption(urlOption())
    .addOption(tokenOption())
    .option('--secret <chainId:secretId...>', 'only these secrets (default: every lost one)')
    .action(async (options: AdminOptions & { secret?: string[] }) => {
      const secrets = options.secret?.map((s) => {
        const m = /^(-1|[1-9]\d*):([1-9]\d*)$/.exec(s);
        if (!m) throw new Error(`member: --secret "${s.slice(0, 40)}": expected <chainId>:<secretId>, e.g. -1:42`);
        return { chainId: Number(m[1]), secretId: Number(m[2]) };
      });
      const body = z
        .object({ acknowledged: z.array(secretRefSchema), notLost: z.array(secretRefSchema) })
        .parse(await call(options, 'POST', '/admin/secrets/acknowledge-loss', secrets ? { secrets } : {}));
      const named = (list: Array<{ chainId: number; secretId: number }>) => list.map((x) => `${x.chainId}:${x.secretId}`).join(' ');
      print(`acknowledged lost: ${body.acknowledged.length}${body.acknowledged.length > 0 ? `  ${named(body.acknowledged)}` : ''}`);
      if (body.notLost.length > 0) print(`not lost (threshold members or more may hold a share; not recorded): ${named(body.notLost)}`);
      process.exitCode = body.notLost.length > 0 ? 1 : 0;
    });
  member
    .command('replace')
    .description("give a node whose keys are lost a new identity: the next membership epoch, approved by threshold members' keys")
    .requiredOption('--cluster <file>', 'the cluster file in force')
    .requiredOption('--node <id>', 'the node whose identity is replaced (cluster-file id)')
    .requiredOption('--keys-dir <dir>', 'where the new keys are created (must hold none)')
    .requiredOption('--approvers <file>', 'JSON list of approving members: [{ "url": operator URL, "token": admin token }]')
    .requiredOption('--out <file>', "where the next epoch's cluster file is written")
    .option('--multiaddr <ma>', 'new libp2p multiaddr of the node (default: unchanged)')
    .option('--http-url <url>', 'new HTTP URL of the node (default: unchanged)')
    .option('--wait <seconds>', 'keep asking members that have not caught up for this long', (v) => Number.parseInt(v, 10), 60)
    .action(async (options: { cluster: string; node: string; keysDir: string; approvers: string; out: string; multiaddr?: string; httpUrl?: string; wait: number }) => {
      // Loaded when it runs: it starts a libp2p node, which `--help` and the other commands need not load.
      const { replaceMember } = await import('./member-replace.ts');
      await replaceMember(options, print);
    });
}
