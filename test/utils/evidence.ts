/**
 * Record evidence for unit tests of the record rules (docs/security.md): a cluster of real keys
 * (members, the first two coordinators), sessions granted by its members, strings signed by session
 * wallets, and the context a kind's check sees.
 */
import { randomUUID } from 'node:crypto';
import type { RecordContext } from '../../src/core/replication/kinds.ts';
import type { ClusterDescriptor } from '../../src/core/replication/ports.ts';
import type { Json } from '../../src/core/replication/canonical-json.ts';
import { sessionGrantDigest, type SessionBody } from '../../src/core/sessions/records.ts';
import type { SignedEvidence } from '../../src/core/sessions/evidence.ts';
import { addressOfPrivateKey, generatePrivateKey, publicKeyOf, signDigest, toHex } from '../../src/crypto/index.ts';
import { newSessionWallet, signData, type SessionWallet } from './session.ts';

/** `n` members with fresh keys, threshold a majority; the first `coordinators` have an HTTP URL. */
export function testCluster(n: number, options: { clusterId: string; coordinators: number }) {
  const keys = Array.from({ length: n }, () => generatePrivateKey());
  const descriptor: ClusterDescriptor = {
    clusterId: options.clusterId,
    size: n,
    threshold: Math.floor(n / 2) + 1,
    nodes: keys.map((k, i) => ({
      id: `node-${i}`,
      slot: i,
      peerId: `peer-${i}`,
      nodeAddress: addressOfPrivateKey(k),
      signingPublicKey: toHex(publicKeyOf(k)),
      multiaddrs: ['/ip4/127.0.0.1/tcp/1'],
      ...(i < options.coordinators ? { httpUrl: `http://127.0.0.1:${3010 + i}` } : {}),
    })),
  };
  return { keys, descriptor };
}

/** Five members, threshold 3; nodes 0 and 1 are coordinators. */
export function unitCluster() {
  return testCluster(5, { clusterId: 'qk-unit-evidence', coordinators: 2 });
}

export type UnitCluster = ReturnType<typeof unitCluster>;

/** A session of `principalId` for a new wallet, granted by members `granters` (default 0–2). */
export function grantedSession(c: UnitCluster, principalId: string, now: number, granters = [0, 1, 2]): { session: SessionBody; wallet: SessionWallet } {
  const wallet = newSessionWallet();
  const grant = { principalId, sessionAddress: wallet.address, publicKey: 'ab'.repeat(32), issuedAt: now - 1000, expiresAt: now + 900_000 };
  const digest = sessionGrantDigest(c.descriptor.clusterId, grant);
  const grants = granters.map((i) => ({ nodeAddress: c.descriptor.nodes[i]!.nodeAddress, signature: '0x' + toHex(signDigest(digest, c.keys[i]!)) }));
  return { session: { ...grant, grants }, wallet };
}

/** `data` signed by the session's wallet, as a record carries it. */
export function evidence(s: { session: SessionBody; wallet: SessionWallet }, data: string): SignedEvidence {
  const signed = signData(s.wallet, data);
  return { data, signature: signed.signature, session: s.session };
}

/** The context a kind's check sees for a record of `origin` written at `atMs`. */
export function contextFor(
  c: UnitCluster,
  options: { key: string; origin: number; atMs: number; held?: Map<string, Json>; siblings?: Array<{ kind: string; key: string; body: Json }>; wins?: boolean; self?: { kind: string } },
): RecordContext {
  const node = c.descriptor.nodes[options.origin]!;
  const held = options.held ?? new Map<string, Json>();
  const own = options.self?.kind;
  return {
    key: options.key,
    origin: node.nodeAddress,
    originSlot: node.slot,
    originIsCoordinator: node.httpUrl !== undefined,
    atMs: options.atMs,
    siblings: options.siblings ?? [],
    current: async (kind, key) => {
      const body = held.get(`${kind}!${key}`);
      return body === undefined ? undefined : { body, origin: node.nodeAddress };
    },
    standing: async () => ({ current: own ? held.get(`${own}!${options.key}`) : undefined, wins: options.wins ?? true }),
  };
}

export const newId = () => randomUUID();
