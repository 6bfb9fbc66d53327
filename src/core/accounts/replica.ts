/**
 * The replica as the accounts capability reads and writes it: typed views of its kinds
 * (src/core/replication/views.ts), one typed write (CONTRIBUTING.md rule 4), and the principal
 * lookups every account operation starts with — "the principal, if it exists and is not deleted".
 */
import { AppError } from '../../errors/index.ts';
import type { Json } from '../replication/canonical-json.ts';
import type { RecordKindDefinition } from '../replication/kinds.ts';
import type { ReplicateOptions, Replicator, StateReader, WriteReport } from '../replication/ports.ts';
import type { ReplicatedRecord } from '../replication/record.ts';
import type { VersionWrite, VersionWriter } from '../replication/sequencer.ts';
import { withoutVersion } from '../replication/versions.ts';
import { stateView, type StateView } from '../replication/views.ts';
import {
  emailIndexKind,
  nodeRegistrationKind,
  otpKind,
  principalKindName,
  type EmailIndexBody,
  type NodeRegistrationBody,
  type OtpBody,
  type PrincipalBody,
  type PRINCIPAL_CHANGES,
} from './records.ts';
import { emailHexOf } from './rules.ts';

/** A principal as stored: its id, current body and record. */
export interface Principal {
  id: string;
  body: PrincipalBody;
  record: ReplicatedRecord & { body: PrincipalBody };
}

/** Dependencies of {@link createAccountReplica}. */
export interface AccountReplicaDeps {
  /** This node's replica. */
  state: StateReader;
  /** The one path for writes (CONTRIBUTING.md rule 4). */
  replicator: Pick<Replicator, 'replicate'>;
  /** Writes of principals (a sequenced kind), through slot 0. */
  versions: Pick<VersionWriter, 'update'>;
  /** Wall clock, Unix ms: a principal's `updatedAt`. */
  clock: () => number;
}

/** Typed reads and writes of the accounts kinds. */
export interface AccountReplica {
  /** `principal`, by principal id. */
  principals: StateView<PrincipalBody>;
  /** `emailIndex`, by the normalised email's hex. */
  emailIndex: StateView<EmailIndexBody>;
  /** `otp`, by `<principalId>:<purpose>`. */
  otps: StateView<OtpBody>;
  /** `nodeRegistration`, by `<principalId>:<slot>`. */
  nodeRegistrations: StateView<NodeRegistrationBody>;
  /** Replicate one record of `kind`, not a principal (quorum write unless `requireQuorum: false`). */
  write<B extends Json>(kind: RecordKindDefinition<B>, key: string, body: B, options?: Pick<ReplicateOptions, 'requireQuorum'>): Promise<WriteReport>;
  /**
   * Write the next version of principal `id` through slot 0: `next` gets the current version (or
   * undefined) and returns the transition and the new body, throws to refuse, or returns undefined to
   * write nothing; it runs again on slot 0's version when this replica was behind.
   */
  writePrincipal(
    id: string,
    next: (current: PrincipalBody | undefined) => { change: PrincipalChange; body: Omit<PrincipalBody, 'v'> } | undefined | Promise<{ change: PrincipalChange; body: Omit<PrincipalBody, 'v'> } | undefined>,
    options?: Pick<ReplicateOptions, 'requireQuorum'>,
  ): Promise<VersionWrite<PrincipalBody>>;
  /** The principal `id`, whatever its status. */
  principal(id: string): Promise<Principal | undefined>;
  /** The principal `id` when it exists and is active (not deleted). */
  activePrincipal(id: string): Promise<Principal | undefined>;
  /** The active principal of a normalised email, through the email index. */
  principalByEmail(email: string): Promise<Principal | undefined>;
  /**
   * Change an active principal by one transition: `patch` applies to its current version (given the
   * version, it may throw to refuse, or return undefined to write nothing); its `updatedAt` never
   * moves back. 404 when it is gone.
   */
  updatePrincipal(
    found: Principal,
    change: PrincipalChange,
    patch: Partial<PrincipalBody> | ((current: PrincipalBody) => Partial<PrincipalBody> | undefined | Promise<Partial<PrincipalBody> | undefined>),
    options?: Pick<ReplicateOptions, 'requireQuorum'>,
  ): Promise<VersionWrite<PrincipalBody>>;
}

/** A principal's transition. */
export type PrincipalChange = (typeof PRINCIPAL_CHANGES)[number];


/** Create the accounts' view of the replica. */
export function createAccountReplica(deps: AccountReplicaDeps): AccountReplica {
  const principals = stateView(deps.state, principalKindName);
  const emailIndex = stateView(deps.state, emailIndexKind);

  const write: AccountReplica['write'] = (kind, key, body, options) => deps.replicator.replicate({ kind: kind.name, key, body }, options);

  async function principal(id: string): Promise<Principal | undefined> {
    const record = await principals.record(id);
    return record ? { id, body: record.body, record } : undefined;
  }

  async function activePrincipal(id: string): Promise<Principal | undefined> {
    const found = await principal(id);
    return found?.body.status === 'active' ? found : undefined;
  }

  return {
    principals,
    emailIndex,
    otps: stateView(deps.state, otpKind),
    nodeRegistrations: stateView(deps.state, nodeRegistrationKind),
    write,
    principal,
    activePrincipal,
    async principalByEmail(email) {
      const id = (await emailIndex.get(emailHexOf(email)))?.principalId;
      return id ? activePrincipal(id) : undefined;
    },
    writePrincipal: (id, next, options) => deps.versions.update(principalKindName, id, async (current) => next(current?.body), options),
    updatePrincipal: (found, change, patch, options) =>
      deps.versions.update(
        principalKindName,
        found.id,
        async (current) => {
          if (!current || current.body.status !== 'active') throw new AppError('NOT_FOUND', 'Account not found');
          const body = current.body;
          const changes = typeof patch === 'function' ? await patch(body) : patch;
          if (!changes) return undefined;
          return { change, body: { ...withoutVersion(body), ...changes, updatedAt: Math.max(deps.clock(), body.updatedAt) } };
        },
        options,
      ),
  };
}
