/**
 * What `quorumkeep local` prints once its cluster is up, before any log line (the nodes' lines are
 * held until then, src/node/local.ts): where the API, the operator ports, the mail and the chain are,
 * and how to stop. Plain text whatever `log.format` is. Each `coordinator <url>` line holds one URL,
 * for scripts that read them.
 */
import type { LocalRun } from './local.ts';

/** Width of the label column. */
const LABEL_WIDTH = 12;

const labelled = (label: string, text: string) => `${label.padEnd(LABEL_WIDTH - 1)} ${text}`;

/** The banner's lines. */
export function localBanner(run: Pick<LocalRun, 'size' | 'threshold' | 'dir' | 'created' | 'coordinators' | 'operators' | 'mail' | 'chain'>): string[] {
  const lines = [`local cluster of ${run.size} (threshold ${run.threshold}) under ${run.dir} is up${run.created ? ' (created by this run)' : ''}`];
  for (const url of run.coordinators) lines.push(labelled('coordinator', url));
  if (run.operators.length > 0) lines.push(labelled('operator', `${run.operators.join(' ')}  (/healthz /readyz /metrics)`));
  for (const mail of run.mail) lines.push(labelled('mail', 'outbox' in mail ? `outbox ${mail.outbox}  (one .eml file a message)` : `SMTP ${mail.smtp} (${mail.nodeId})`));
  if (run.chain) {
    const { entry, syncer, stateFile } = run.chain;
    const where = stateFile ? `; its state in ${stateFile}` : '';
    lines.push(labelled('chain', `${entry.chainId} (${entry.name}) at ${entry.rpcUrl}: secrets controller ${entry.secretsControllerAddress ?? 'none'}, syncer ${syncer.id} (${syncer.nodeAddress})${where}`));
  } else {
    lines.push(labelled('chain', "no local chain (the nodes' configs say which chains they use)"));
  }
  lines.push('press Ctrl-C to stop (the nodes, then the chain)', '');
  return lines;
}
