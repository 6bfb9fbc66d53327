/**
 * Creating a Web2 secret (docs/http.md, Secrets): the signed create string is the request's idempotency
 * key. Slot 0 maps it to one secretId and leases that id to the attempt dealing its key, so a retry
 * after a lost answer gets the same secret back, and a retry through another coordinator meanwhile
 * gets 503 — never a second key for one id. Both sides: slot 0's `claimSecretCreate` and
 * `releaseSecretCreate` operations, and the coordinator's create.
 */
import { randomUUID } from 'node:crypto';
import { AppError } from '../../errors/index.ts';
import { createLruCache } from '../../crypto/index.ts';
import type { Logger } from '../../log/index.ts';
import type { CreatorService } from '../replication/creator.ts';
import { reachableMemberSlots } from '../replication/gather.ts';
import type { MembershipView, StateReader } from '../replication/ports.ts';
import type { ReplicatedRecord } from '../replication/record.ts';
import { currentRead, type VersionWriter } from '../replication/sequencer.ts';
import type { Slot0Registry } from '../slot0-registry.ts';
import { signedStringKey } from '../sessions/evidence.ts';
import { WEB2_CHAIN_ID } from '../sessions/signed-data.ts';
import type { SignedDataVerifier, SignedRequest, VerifiedCaller } from '../sessions/types.ts';
import type { KeyDealer } from './dealing.ts';
import type { PendingShareStore } from './ports.ts';
import { SECRET_TYPE_MLKEM768, secretKey, secretKindName, type SecretBody } from './records.ts';
import { evidenceFor, USE_KEY_RE } from './rules.ts';
import type { CreatedSecret } from './types.ts';

/**
 * How long slot 0 reserves a create string's secretId for the coordinator creating it, ms: a retry of
 * the same string through another coordinator meanwhile gets 503, never a second key for one id.
 */
export const CREATE_LEASE_MS = 15_000;

/** Slot 0's counter of Web2 secret ids. */
export const SECRET_ID_COUNTER = 'secretId';

/**
 * Slot 0: raise the id counter to the highest Web2 secret id this replica holds a record of, so no id
 * of a secret is handed out again; returns the last id allocated before, and that highest id. Run once
 * slot 0 knows its own log, before it writes (src/core/replication/own-log.ts): a slot 0 on an empty
 * data dir starts its counters at 0, and every secret's versions are slot 0's own records, so by then
 * they are all back (docs/operations.md, "Lose a disk, keep the keys").
 */
export async function raiseSecretIdCounter(deps: { state: StateReader; raiseTo(counter: string, atLeast: number): Promise<number> }): Promise<{ before: number; highest: number }> {
  let highest = 0;
  for await (const r of deps.state.list(secretKindName.name, { reverse: true, limit: 1 })) highest = (r.body as SecretBody).secretId;
  return { before: await deps.raiseTo(SECRET_ID_COUNTER, highest), highest };
}

/** Slot 0's durable claim on a create string: the id it maps to and the attempt holding the lease. */
export interface CreateClaim {
  secretId: number;
  coordinator: string;
  attempt?: string;
  /** End of the lease, Unix ms (0: given back). */
  until: number;
}

/** The name of a create string's claim in slot 0's claims. */
export function createClaimName(useKey: string): string {
  return `secret-create:${useKey}`;
}

/** A fresh claim on `secretId` for one attempt, leased from `now`. */
export function leasedClaim(secretId: number, coordinator: string, attempt: string, now: number): CreateClaim {
  return { secretId, coordinator, attempt, until: now + CREATE_LEASE_MS };
}

/**
 * The lease an attempt gets on a string slot 0 already mapped (whose secret has no record yet): one
 * attempt at a time deals this id's key — another while the lease runs would mix shares — so 503
 * while another attempt's lease runs.
 */
export function renewedClaim(held: CreateClaim, coordinator: string, attempt: string, now: number): CreateClaim {
  if (held.attempt !== attempt && held.until > now) throw new AppError('NOT_READY', 'This secret is being created; try again shortly', { retryAfterSeconds: 1 });
  return leasedClaim(held.secretId, coordinator, attempt, now);
}

/** The claim once `attempt` gives its lease back, or undefined when the lease is not that attempt's. */
export function releasedClaim(held: CreateClaim, attempt: string): CreateClaim | undefined {
  return held.attempt === attempt ? { ...held, until: 0 } : undefined;
}

/** Dependencies of {@link createSecretCreation}. */
export interface SecretCreationDeps {
  membership: MembershipView;
  creator: Pick<CreatorService, 'call' | 'register'>;
  /** Writes of sequenced kinds, through slot 0. */
  versions: Pick<VersionWriter, 'update' | 'ensureDurable' | 'guard'>;
  /** This replica, for the principal a create string's session belongs to. */
  state: StateReader;
  /** Take records slot 0 sent into this replica. */
  ingest(records: unknown[]): Promise<unknown>;
  /** Slot 0's counters and claims, group-committed. */
  registry: Pick<Slot0Registry, 'serialised' | 'get'>;
  verifier: SignedDataVerifier;
  dealer: Pick<KeyDealer, 'deal'>;
  pending: Pick<PendingShareStore, 'get'>;
  clock: () => number;
  /** The secrets module's logger. */
  logger: Logger;
}

/** Register slot 0's create operations and return the coordinator's POST /web2/secret. */
export function createSecretCreation(deps: SecretCreationDeps): { createSecret(request: SignedRequest): Promise<CreatedSecret> } {
  const { membership, creator, registry, clock, logger: log } = deps;
  const { descriptor, self } = membership;
  const clusterId = descriptor.clusterId;

  // Slot 0: a secret's first version only for the id its create string claimed here (a coordinator
  // cannot take an id of its choosing, a future one included).
  // The ids claimed lately, by claim name, so the guard of a create just claimed reads no disk.
  const claimed = createLruCache<number>(1024);
  deps.versions.guard('secret', 'create', async (proposal) => {
    const body = proposal.body as unknown as SecretBody;
    const evidence = body.auth?.by === 'create' ? body.auth.evidence : undefined;
    const name = evidence ? createClaimName(signedStringKey('createSecret', evidence.data.split('_'))) : undefined;
    let id = name ? claimed.get(name) : undefined;
    if (name && id === undefined) {
      const raw = await registry.get(name);
      id = raw ? (JSON.parse(raw) as CreateClaim).secretId : undefined;
    }
    if (id !== body.secretId) throw new AppError('FORBIDDEN', 'no create claim names this secret', undefined, { reason: 'not_proposable' });
  });

  // Slot 0: create string → secretId, leased to the attempt creating it; claims and releases of
  // leases are decided one at a time, and each answered once what it wrote or read is durable (many
  // share one write: src/core/slot0-registry.ts).
  const serialised = registry.serialised();
  creator.register('claimSecretCreate', (params) =>
    serialised(async (tx) => {
      const { useKey, coordinator, attempt } = params;
      if (typeof useKey !== 'string' || !USE_KEY_RE.test(useKey) || typeof coordinator !== 'string' || typeof attempt !== 'string' || attempt.length > 64) {
        throw new AppError('BAD_REQUEST', 'malformed create claim');
      }
      const name = createClaimName(useKey);
      const now = clock();
      const raw = await tx.get(name);
      if (raw) {
        const held = JSON.parse(raw) as CreateClaim;
        // Slot 0 writes every secret's versions: the first one is here as soon as it was written.
        const record = await deps.state.get('secret', secretKey(held.secretId));
        if (record) return { secretId: held.secretId, done: true, record };
        tx.put(name, JSON.stringify(renewedClaim(held, coordinator, attempt, now)));
        return { secretId: held.secretId, done: false };
      }
      const secretId = await tx.nextWithClaim(SECRET_ID_COUNTER, name, (id) => JSON.stringify(leasedClaim(id, coordinator, attempt, now)));
      return { secretId, done: false };
    }).then((answer) => {
      // Durable now: the guard of this id's first version may take it from memory.
      if (!answer.done) claimed.set(createClaimName(params.useKey as string), answer.secretId);
      return answer;
    }),
  );

  // Slot 0: a failed attempt gives its lease back.
  creator.register('releaseSecretCreate', (params) =>
    serialised(async (tx) => {
      const { useKey, attempt } = params;
      if (typeof useKey !== 'string' || !USE_KEY_RE.test(useKey) || typeof attempt !== 'string') throw new AppError('BAD_REQUEST', 'malformed create release');
      const name = createClaimName(useKey);
      const raw = await tx.get(name);
      if (!raw) return { released: false };
      const released = releasedClaim(JSON.parse(raw) as CreateClaim, attempt);
      if (!released) return { released: false };
      tx.put(name, JSON.stringify(released));
      return { released: true };
    }),
  );

  /**
   * The original answer to a create string that already made its secret: its first version, as slot
   * 0 holds it, made durable on a quorum first (the first attempt may have answered 503).
   */
  async function existingCreate(secretId: number, record: ReplicatedRecord | undefined): Promise<CreatedSecret> {
    if (!record || record.kind !== 'secret' || record.key !== secretKey(secretId)) throw new AppError('NOT_READY', `Secret ${secretId} was created and is not on this coordinator yet; try again`);
    await deps.ingest([record]);
    await deps.versions.ensureDurable(record);
    const status = (await deps.pending.get(secretId)) ? 'propagating' : 'complete';
    return { secretId, clusterId, publicKeyCid: (record.body as SecretBody).publicKeyCid, status };
  }

  /** Deal a new key for `secretId`: shares to the members, then the record. */
  async function dealSecret(caller: VerifiedCaller, request: SignedRequest, secretId: number): Promise<CreatedSecret> {
    let publicKeyCid = '';
    const { status, stored } = await deps.dealer.deal(WEB2_CHAIN_ID, secretId, (key) => {
      publicKeyCid = key.publicKeyCid;
      // The first version, dealt here (this coordinator vouches for the key) and written by slot 0.
      return deps.versions.update(secretKindName, secretKey(secretId), async (current) => {
        if (current) throw new AppError('NOT_READY', `Secret ${secretId} is being created elsewhere; try again`);
        const principal = await currentRead(deps.state, 'principal', caller.principalId);
        if (!principal.at) throw new AppError('NOT_READY', 'The principal is not on this coordinator yet; try again');
        const body: Omit<SecretBody, 'v'> = {
          secretId,
          ownerPrincipalId: caller.principalId,
          delegatePrincipalId: null,
          clusterId,
          secretType: SECRET_TYPE_MLKEM768,
          publicKeyCid: key.publicKeyCid,
          isSyncing: false,
          createdAt: key.now,
          updatedAt: key.now,
          shareDigests: key.shareDigests,
          auth: { by: 'create', evidence: evidenceFor(caller, request), principal: principal.at },
        };
        return { change: 'create', body, reads: [principal] };
      });
    });
    log.info({ secretId, status, stored }, 'secret created');
    return { secretId, clusterId, publicKeyCid, status };
  }

  /** One create attempt: slot 0 maps the string to an id (leased to this attempt), then the key is dealt. */
  async function createWithClaim(caller: VerifiedCaller, request: SignedRequest, useKey: string): Promise<CreatedSecret> {
    const attempt = randomUUID();
    const claim = (await creator.call('claimSecretCreate', { useKey, coordinator: self.id, attempt })) as { secretId: number; done: boolean; record?: ReplicatedRecord };
    if (claim.done) return existingCreate(claim.secretId, claim.record);
    try {
      return await dealSecret(caller, request, claim.secretId);
    } catch (err) {
      // Give the id back to the next attempt now rather than at the lease's end (best effort).
      creator.call('releaseSecretCreate', { useKey, attempt }).catch(() => undefined);
      throw err;
    }
  }

  /** Creates in flight on this coordinator, by create string. */
  const creating = new Map<string, Promise<CreatedSecret>>();

  return {
    async createSecret(request) {
      const caller = await deps.verifier.verify(request, { parts: 4 });
      if (caller.subject !== '0') throw new AppError('BAD_REQUEST', 'Invalid data format: the second part must be 0 when creating a secret');
      reachableMemberSlots(membership);
      // The signed string is the request's idempotency key: slot 0 maps it to one secretId, so a
      // retry after a lost answer gets the same secret back, never a second one.
      const useKey = signedStringKey('createSecret', caller.parts);
      // Identical requests on this coordinator share one attempt.
      let run = creating.get(useKey);
      if (!run) {
        run = createWithClaim(caller, request, useKey).finally(() => creating.delete(useKey));
        creating.set(useKey, run);
      }
      return run;
    },
  };
}
