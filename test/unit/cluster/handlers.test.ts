/**
 * The request/response protocol servers (src/cluster/handlers/): what each answers, with its deps
 * stubbed (docs/architecture.md, "Network").
 */
import { describe, expect, it } from 'vitest';
import { createApplyHandler } from '../../../src/cluster/handlers/apply.ts';
import { createCreateCallHandler } from '../../../src/cluster/handlers/create.ts';
import { createMemberServiceHandler } from '../../../src/cluster/handlers/member.ts';
import { createPingHandler } from '../../../src/cluster/handlers/ping.ts';
import { hasFeature, NODE_FEATURES } from '../../../src/cluster/protocols.ts';
import type { Peer } from '../../../src/cluster/peers.ts';
import type { Logger } from '../../../src/log/index.ts';
import { AppError, refusal } from '../../../src/errors/index.ts';

const remote = { entry: { id: 'node-1', slot: 1 } } as unknown as Peer;

function warnings() {
  const lines: Array<Record<string, unknown>> = [];
  const log = { warn: (fields: Record<string, unknown>, message: string) => lines.push({ ...fields, message }) } as unknown as Logger;
  return { log, lines };
}

describe('apply', () => {
  it('ingests the records and answers what was applied, held and refused', async () => {
    const ingested: unknown[][] = [];
    const handler = createApplyHandler({
      engine: {
        ingest: async (records) => {
          ingested.push(records);
          return { applied: 1, duplicates: 0, rejected: [] };
        },
      },
    });
    await expect(handler({ records: [{ seq: 1 }] }, remote)).resolves.toEqual({ applied: 1, duplicates: 0, rejected: [] });
    expect(ingested).toEqual([[{ seq: 1 }]]);
    await expect(handler({ records: [] }, remote)).rejects.toThrow('rejected: malformed apply');
    await expect(handler(null, remote)).rejects.toThrow('rejected: malformed apply');
  });
});

describe('ping', () => {
  it('answers the body it got, with what the node can do; the pinger reads a feature from the answer', async () => {
    const answer = await createPingHandler(Object.values(NODE_FEATURES))({ t: 42 }, remote);
    expect(answer).toEqual({ t: 42, features: [NODE_FEATURES.recordBatchSig, NODE_FEATURES.shareStoreMany] });
    expect(hasFeature(answer, NODE_FEATURES.recordBatchSig)).toBe(true);
    expect(hasFeature(answer, NODE_FEATURES.shareStoreMany)).toBe(true);
    // An older build echoes the body alone: it has no feature.
    const older = await createPingHandler([])({ t: 42 }, remote);
    expect(hasFeature(older, NODE_FEATURES.recordBatchSig)).toBe(false);
    expect(hasFeature({ t: 42 }, NODE_FEATURES.recordBatchSig)).toBe(false);
    expect(hasFeature(null, NODE_FEATURES.recordBatchSig)).toBe(false);
    expect(hasFeature({ features: 'record-batch-sig/1' }, NODE_FEATURES.recordBatchSig)).toBe(false);
    // A body that is not an object comes back as it came.
    await expect(createPingHandler([NODE_FEATURES.recordBatchSig])(7, remote)).resolves.toBe(7);
  });
});

describe('create', () => {
  it('refuses on a node that is not slot 0, and answers a refusal with its message and code', async () => {
    await expect(createCreateCallHandler({})({ op: 'allocate' }, remote)).resolves.toEqual({ ok: false, error: 'not the creator' });
    const handler = createCreateCallHandler({
      createHandler: async (request, from) => {
        if ((request as { op?: string }).op === 'claimEmail') throw Object.assign(new Error('taken'), { code: 'CONFLICT' });
        return { id: 7, from: from.id };
      },
    });
    await expect(handler({ op: 'allocate' }, remote)).resolves.toEqual({ ok: true, result: { id: 7, from: 'node-1' } });
    await expect(handler({ op: 'claimEmail' }, remote)).resolves.toEqual({ ok: false, error: 'taken', code: 'CONFLICT' });
  });
});

describe('member services', () => {
  it('refuses on a gateway with FORBIDDEN, not_member', async () => {
    const { log } = warnings();
    await expect(createMemberServiceHandler('grant', { log })({}, remote)).resolves.toEqual({ ok: false, error: 'not a member', code: 'FORBIDDEN', reason: 'not_member' });
  });

  it('passes a refusal on with its code and reason, and reports any other failure without its internals', async () => {
    const { log, lines } = warnings();
    const handler = createMemberServiceHandler('shard', {
      log,
      memberHandlers: {
        shard: async (body) => {
          if ((body as { behind?: boolean }).behind) throw refusal('NOT_READY', 'not_ready', 'not caught up');
          if ((body as { plain?: boolean }).plain) throw new AppError('CONFLICT', 'no reason');
          throw new Error('disk on fire');
        },
      },
    });
    await expect(handler({ behind: true }, remote)).resolves.toEqual({ ok: false, error: 'not caught up', code: 'NOT_READY', reason: 'not_ready' });
    await expect(handler({ plain: true }, remote)).resolves.toEqual({ ok: false, error: 'no reason', code: 'CONFLICT' });
    expect(lines).toEqual([]);
    await expect(handler({}, remote)).resolves.toEqual({ ok: false, error: 'member service failed' });
    expect(lines).toMatchObject([{ service: 'shard', peer: 'node-1', message: 'member service failed' }]);
  });
});
