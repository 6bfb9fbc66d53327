/**
 * The replica as the accounts capability reads and writes it: typed views of its kinds
 * (src/core/replication/views.ts), one typed write (CONTRIBUTING.md rule 4), and the principal
 * lookups every account operation starts with — "the principal, if it exists and is not deleted".
 */
import type { Json } from '../replication/canonical-json.ts';
import type { RecordKindDefinition } from '../replication/kinds.ts';
import type { ReplicateOptions, Replicator, StateReader, WriteReport } from '../replication/ports.ts';
import type { ReplicatedRecord } from '../replication/record.ts';
import { stateView, type StateView } from '../replication/views.ts';
import {
  emailIndexKind,
  nodeRegistrationKind,
  otpKind,
  principalKind,
  type EmailIndexBody,
  type NodeRegistrationBody,
  type OtpBody,
  type PrincipalBody,
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
  /** Replicate one record of `kind` (quorum write unless `requireQuorum: false`). */
  write<B extends Json>(kind: RecordKindDefinition<B>, key: string, body: B, options?: Pick<ReplicateOptions, 'requireQuorum'>): Promise<WriteReport>;
  /** The principal `id`, whatever its status. */
  principal(id: string): Promise<Principal | undefined>;
  /** The principal `id` when it exists and is active (not deleted). */
  activePrincipal(id: string): Promise<Principal | undefined>;
  /** The active principal of a normalised email, through the email index. */
  principalByEmail(email: string): Promise<Principal | undefined>;
  /** Write a change to a principal; its `updatedAt` never moves back. */
  updatePrincipal(found: Principal, change: Partial<PrincipalBody>, options?: Pick<ReplicateOptions, 'requireQuorum'>): Promise<WriteReport>;
}

/** Create the accounts' view of the replica. */
export function createAccountReplica(deps: AccountReplicaDeps): AccountReplica {
  const principals = stateView(deps.state, principalKind);
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
    updatePrincipal: (found, change, options) => write(principalKind, found.id, { ...found.body, ...change, updatedAt: Math.max(deps.clock(), found.body.updatedAt) }, options),
  };
}
