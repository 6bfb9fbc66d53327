/**
 * A permit request whose answer was lost (issue 11: a create answered 503 still ran on slot 0 once a
 * stalled connection delivered it; the client's retry with the same requestId got "the link was sent
 * by email", and no mail ever came). Here slot 0 runs the create a coordinator sent it and the answer
 * goes nowhere; the client's retry through the coordinator mails a link — once — and that link works.
 */
import { describe, expect, it } from 'vitest';
import { loadOrCreateNodeKeys } from '../../src/cluster/index.ts';
import { permitRequestDigest } from '../../src/core/permits/records.ts';
import type { CreatorService } from '../../src/core/replication/creator.ts';
import { sha256Hex, signDigest, toHex } from '../../src/crypto/index.ts';
import { getJson, postJson } from '../utils/http.ts';
import { confirmLinkOf, digestOf, ownerBody } from '../utils/permits.ts';
import { aliceAndBob } from '../utils/scenario.ts';

const scene = aliceAndBob();

describe('a permit create whose answer was lost', () => {
  it('the retry mails the link once, and it confirms', async () => {
    const { cluster, A, B, alice, bob } = scene;
    const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0));
    const secretId = created.body.secretId;
    const body = ownerBody(alice, secretId, 'delegate', bob.principalId);

    // What coordinator B sends slot 0 for this request, run there, with B never hearing back.
    const { keys } = await loadOrCreateNodeKeys(cluster.members[1]!.config.keysDir);
    const payloadDigest = digestOf(body.payload);
    const tokenHash = sha256Hex('a token nobody will ever see');
    const request = { requestId: body.requestId, action: 'delegate' as const, principalId: alice.principalId, secretId, payloadDigest, tokenHash };
    const requestedBy = { nodeAddress: cluster.members[1]!.nodeAddress, signature: '0x' + toHex(signDigest(permitRequestDigest(cluster.descriptor.clusterId, request), keys.signing)) };
    const session = (await cluster.members[0]!.state.get('session', alice.wallet.address))!.body;
    // The request reaches slot 0 after B's deadline (it sat in a stalled connection): B answered 503.
    const slot0 = cluster.members[0]!.creator as CreatorService;
    const lost = (await slot0.call('createPermit', { ...request, payload: body.payload, requestedBy, auth: { data: body.data, signature: body.signature, session }, deadline: Date.now() - 1 })) as {
      permitId: string;
      created: boolean;
    };
    expect(lost.created).toBe(true);
    const mailsFor = () => cluster.mailbox.messages.filter((m) => m.text.includes(lost.permitId)).length;
    expect(mailsFor()).toBe(0);

    // The client retries the same request: the link is mailed now.
    const retry = await postJson<{ permitId: string }>(`${B}/web2/permit`, body);
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body.permitId).toBe(lost.permitId);
    const link = await confirmLinkOf(cluster, lost.permitId);
    // Once: another retry answers the same and mails nothing new.
    const again = await postJson(`${A}/web2/permit`, body);
    expect(again.status).toBe(200);
    const confirmed = await getJson<{ status: string }>(`${A}${link.pathAndQuery}`);
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    expect(confirmed.body.status).toBe('consumed');
    expect(mailsFor()).toBe(1);
  });
});
