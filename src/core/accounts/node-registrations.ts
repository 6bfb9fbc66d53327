/**
 * Ed25519 key registration and its propagation to the members (docs/http.md, Web2 accounts:
 * register-key, retry-node-registration, node-registration-status). The key travels in the principal
 * record; each member that stores it acknowledges with a `nodeRegistration` record, so every
 * coordinator can tell which members hold it.
 */
import { AppError, type ErrorCode } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { membersOf, type MembershipView, type Replicator } from '../replication/ports.ts';
import type { ReplicatedRecord } from '../replication/record.ts';
import type { AccountCrypto } from './ports.ts';
import { keyRegistrationMessage, nodeRegistrationKind, type PrincipalBody } from './records.ts';
import type { AccountReplica, Principal } from './replica.ts';
import { checkAccountPassword, checkPrincipalId, emailHexOf, parseKeyProof, registrationStatus } from './rules.ts';
import type { AccountsService, KeyRegistrationResult } from './types.ts';

/** Dependencies of {@link createNodeRegistrations}. */
export interface NodeRegistrationsDeps {
  replica: Pick<AccountReplica, 'activePrincipal' | 'updatePrincipal' | 'principals' | 'nodeRegistrations' | 'write'>;
  /** Resends a principal record to the members that lack it. */
  replicator: Pick<Replicator, 'resend'>;
  /** The members, and this node's slot (null on a gateway: it holds no keys to acknowledge). */
  membership: MembershipView;
  crypto: Pick<AccountCrypto, 'isEd25519PublicKeyHex' | 'verifyPassword' | 'verifyDummy' | 'verifyEd25519'>;
  /** Wall clock, Unix ms: an ack's `storedAt`. */
  clock: () => number;
  /** The accounts module's logger. */
  log: Logger;
  /**
   * True while this node holds its own writes (src/core/replication/own-log.ts): its own acks may be
   * on their way back by sync, so none is written from applied records then; the node reconciles once
   * the writes are released. @default never
   */
  ownWritesHeld?(): boolean;
}

/** Key registration for the HTTP layer, and the hooks through which members acknowledge keys. */
export interface NodeRegistrations extends Pick<AccountsService, 'registerKey' | 'retryNodeRegistration' | 'nodeRegistrationStatus'> {
  /** After records are stored: a member acknowledges keys it now holds (nodeRegistration). */
  onRecordsApplied(records: readonly ReplicatedRecord[]): void;
  /**
   * At start, once own writes are released: acknowledge every held key whose ack is missing — an ack
   * in flight when the node stopped, or a key applied while own writes were held, is otherwise lost,
   * since the principal record will not be applied again. Returns how many acks it wrote.
   */
  reconcileNodeRegistrations(): Promise<number>;
}

/** Create key registration and the acknowledgements of one node. */
export function createNodeRegistrations(deps: NodeRegistrationsDeps): NodeRegistrations {
  const { replica, crypto, log } = deps;
  const descriptor = deps.membership.descriptor;
  const members = membersOf(descriptor);
  const self = deps.membership.self;
  const statusOf = (holding: number) => registrationStatus(holding, descriptor.size, descriptor.threshold);

  /** The active principal `principalId` and its registered key; 404, or `noKeyCode` when it has no key. */
  async function withKey(principalId: string, noKeyCode: ErrorCode): Promise<{ found: Principal; key: string }> {
    checkPrincipalId(principalId);
    const found = await replica.activePrincipal(principalId);
    if (!found) throw new AppError('NOT_FOUND', 'Principal not found');
    const key = found.body.ed25519PublicKey;
    if (!key) throw new AppError(noKeyCode, 'No key registered for this principal');
    return { found, key };
  }

  /** A principal's version sent again to every other member; this member counts as holding it. */
  async function resendToAll(record: ReplicatedRecord): Promise<{ acked: string[]; failed: Array<{ nodeAddress: string; slot: number; error: string }> }> {
    const report = await deps.replicator.resend(record, members.filter((m) => m.id !== self.id).map((m) => m.slot));
    return { acked: self.slot !== null ? [self.nodeAddress, ...report.acked] : report.acked, failed: report.failed };
  }

  /** Members whose nodeRegistration says they hold `key` for the principal. */
  async function holders(principalId: string, key: string): Promise<Set<string>> {
    const out = new Set<string>();
    for await (const { body } of replica.nodeRegistrations.list({ prefix: `${principalId}:` })) {
      const m = members.find((x) => x.slot === body.slot);
      if (m && body.ed25519PublicKey === key) out.add(m.nodeAddress);
    }
    return out;
  }

  /**
   * A member's ack that it holds a principal's current key: written once per key. Returns true when
   * it wrote one.
   */
  async function acknowledgeKey(principalId: string): Promise<boolean> {
    if (self.slot === null) return false;
    const key = (await replica.principals.get(principalId))?.ed25519PublicKey;
    if (!key) return false;
    const ackKey = `${principalId}:${self.slot}`;
    if ((await replica.nodeRegistrations.get(ackKey))?.ed25519PublicKey === key) return false;
    await replica.write(nodeRegistrationKind, ackKey, { principalId, slot: self.slot, ed25519PublicKey: key, storedAt: deps.clock() }, { requireQuorum: false });
    return true;
  }

  return {
    async registerKey(principalId, password, publicKey, rawSignature) {
      checkPrincipalId(principalId);
      const signature = parseKeyProof(publicKey, rawSignature, crypto);
      const found = await checkAccountPassword(await replica.activePrincipal(principalId), password, crypto, { notFound: 'Principal not found', wrongPassword: 'Invalid password' });
      if (!crypto.verifyEd25519(publicKey, keyRegistrationMessage(publicKey), signature)) throw new AppError('UNAUTHORIZED', 'Invalid Ed25519 signature');
      if (found.body.ed25519PublicKey && found.body.ed25519PublicKey !== publicKey) {
        throw new AppError('CONFLICT', 'A different key is already registered; rotate it with a permit');
      }
      // Send the key to every member, whatever the membership: the status says how far it got. The
      // same key again writes nothing: its version is sent again to the members.
      const write = await replica.updatePrincipal(
        found,
        'registerKey',
        (current) => {
          if (current.ed25519PublicKey === publicKey) return undefined;
          if (current.ed25519PublicKey) throw new AppError('CONFLICT', 'A different key is already registered; rotate it with a permit');
          return { ed25519PublicKey: publicKey, keyProof: signature, keyPermitId: null };
        },
        { requireQuorum: false },
      );
      const report = write.written ? write : await resendToAll(write.current!);
      const nodeErrors: Record<string, string> = Object.fromEntries(report.failed.map((f) => [f.nodeAddress, f.error]));
      const result: KeyRegistrationResult = {
        principalId,
        emailHex: emailHexOf(found.body.email),
        nodeRegistrationStatus: statusOf(report.acked.length),
        failedNodes: report.failed.map((f) => f.nodeAddress),
        nodeErrors,
      };
      log.info({ principalId, status: result.nodeRegistrationStatus, acked: report.acked.length }, 'key registered');
      if (result.nodeRegistrationStatus === 'failed') {
        throw new AppError('CONFLICT', 'Key registration reached no member', { ...result, failedNodes: result.failedNodes, nodeErrors });
      }
      return result;
    },

    async retryNodeRegistration(principalId) {
      const { found, key } = await withKey(principalId, 'BAD_REQUEST');
      const have = await holders(principalId, key);
      const missing = members.filter((m) => !have.has(m.nodeAddress));
      if (missing.length === 0) return { principalId, nodeRegistrationStatus: 'complete', failedNodes: [], message: 'Every member already holds the key' };
      const report = await deps.replicator.resend(found.record, missing.map((m) => m.slot));
      for (const a of report.acked) have.add(a);
      const failedNodes = members.filter((m) => !have.has(m.nodeAddress)).map((m) => m.nodeAddress);
      return {
        principalId,
        nodeRegistrationStatus: statusOf(have.size),
        failedNodes,
        message: `Re-sent to ${missing.length} member(s); ${report.acked.length} stored it`,
      };
    },

    async nodeRegistrationStatus(principalId) {
      const { key } = await withKey(principalId, 'NOT_FOUND');
      const have = await holders(principalId, key);
      return {
        principalId,
        nodeRegistrationStatus: statusOf(have.size),
        successNodes: members.filter((m) => have.has(m.nodeAddress)).map((m) => m.nodeAddress),
        failedNodes: members.filter((m) => !have.has(m.nodeAddress)).map((m) => m.nodeAddress),
      };
    },

    onRecordsApplied(records) {
      if (deps.ownWritesHeld?.()) return;
      for (const r of records) {
        // Applied records passed the engine's validator: a `principal` body is a PrincipalBody.
        if (r.kind !== 'principal' || !(r.body as PrincipalBody).ed25519PublicKey) continue;
        acknowledgeKey(r.key).catch((err: unknown) => log.warn({ err: (err as Error).message, principalId: r.key }, 'node registration ack failed'));
      }
    },

    async reconcileNodeRegistrations() {
      let written = 0;
      for await (const r of replica.principals.list()) {
        if (r.body.ed25519PublicKey && (await acknowledgeKey(r.key))) written++;
      }
      if (written > 0) log.info({ written }, 'node registration acks reconciled');
      return written;
    },
  };
}
