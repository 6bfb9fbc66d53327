/**
 * A permit request is answered 201 or 200 only once its confirmation link went out (issue 28: under a
 * partition two permits were answered 200 while slot 0 was unreachable, no working link was ever
 * mailed, and the exact retry answered 200 again with no mail). docs/permits.md, "The confirmation
 * mail": the mail is sent before the answer, and slot 0 records it; anything short of that is `503
 * MAIL_UNAVAILABLE`, and the exact retry mails a link that confirms the permit. Real parts: a
 * 5-member cluster, real SMTP (the mail server holds a message in flight, or is taken down).
 */
import { describe, expect, it } from 'vitest';
import { waitFor, type CaughtMail } from 'quorumkeep/testing';
import { permitIdFor } from '../../src/core/permits/records.ts';
import type { CreatorService } from '../../src/core/replication/creator.ts';
import { getJson, postJson } from '../utils/http.ts';
import { ownerBody, secretOnEveryMember } from '../utils/permits.ts';
import { aliceAndBob } from '../utils/scenario.ts';
import { expectApiError } from '../utils/web2.ts';

/** Added to every node's wall clock (only moves forward): a mailing lease ends without waiting. */
let offsetMs = 0;
const now = () => Date.now() + offsetMs;

/** The next permit mail the server is to hold before accepting it, armed by {@link holdNextPermitMail}. */
let held: { arrived(mail: CaughtMail): void; release: Promise<void> } | undefined;
const isPermitMail = (m: CaughtMail) => /confirm the/i.test(m.subject);

const scene = aliceAndBob({
  clock: now,
  mailbox: {
    async beforeAccept(mail) {
      const h = held;
      if (!h || !isPermitMail(mail)) return;
      held = undefined;
      h.arrived(mail);
      await h.release;
    },
  },
});

/** Hold the next permit mail at the server: `arrived` once it is there, not yet accepted; `release` accepts it. */
function holdNextPermitMail(): { arrived: Promise<CaughtMail>; release(): void } {
  let arrived!: (mail: CaughtMail) => void;
  let release!: () => void;
  const arrivedP = new Promise<CaughtMail>((r) => (arrived = r));
  held = { arrived, release: new Promise<void>((r) => (release = r)) };
  return { arrived: arrivedP, release };
}

/** The permit mails caught for `permitId`, oldest first. */
const permitMailsFor = (permitId: string) => scene.cluster.mailbox.messages.filter((m) => isPermitMail(m) && m.text.includes(permitId));

/** The confirmation link's path and query in a mail. */
const linkIn = (mail: CaughtMail) => {
  const url = new URL(/https?:\/\/\S+\/web2\/confirm\?\S+/.exec(mail.text)![0]);
  return url.pathname + url.search;
};

/** A new secret of Alice's, and the request body of a permit making Bob its delegate (with its permitId). */
async function delegateRequest() {
  const res = await postJson<{ secretId: number }>(`${scene.A}/web2/secret`, scene.alice.signed(0, undefined, now()));
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const secretId = res.body.secretId;
  const body = ownerBody(scene.alice, secretId, 'delegate', scene.bob.principalId, { at: now() });
  return { secretId, body, permitId: permitIdFor(scene.cluster.descriptor.clusterId, body.requestId) };
}

/** Confirm from `path` on `url`: consumed, and the delegate set on every member. */
async function expectConfirmed(url: string, path: string, secretId: number): Promise<void> {
  const res = await getJson<{ status: string }>(`${url}${path}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.status).toBe('consumed');
  await secretOnEveryMember(scene.cluster, secretId, (s) => s.delegatePrincipalId === scene.bob.principalId);
}

describe('the confirmation mail of a permit request', () => {
  it('slot 0 cut off from the coordinator while it mails: 503, and after the heal the exact retry mails a link that confirms', async () => {
    const { cluster, A, B } = scene;
    const { secretId, body, permitId } = await delegateRequest();

    // The permit is created on slot 0 and its mail reaches the server; before the server accepts it,
    // coordinator B (slot 1) loses slot 0.
    const hold = holdNextPermitMail();
    const answer = postJson<{ permitId: string }>(`${B}/web2/permit`, body);
    const first = await hold.arrived;
    await cluster.partition(1, 0);
    hold.release();
    // The mail went out, but slot 0 cannot record it: B does not claim it did.
    expectApiError(await answer, 503, 'MAIL_UNAVAILABLE');
    expect(isPermitMail(first)).toBe(true);

    await cluster.heal();
    // B's mailing lease has not ended: slot 0 cannot tell that B is done, and a replay does not cut
    // off a link that may still be on its way. Retry-safe, and no mail.
    expectApiError(await postJson(`${B}/web2/permit`, body), 503, 'MAIL_UNAVAILABLE');

    // Past the lease (B's deadline + 30 s), the exact retry mails a new link.
    offsetMs += 35_000;
    const retry = await postJson<{ permitId: string }>(`${B}/web2/permit`, body);
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    const mails = permitMailsFor(permitId);
    expect(mails).toHaveLength(2);
    expect(mails[0]!.text).toBe(first.text);
    // Only the newest link works; it confirms the permit end to end.
    expectApiError(await getJson(`${A}${linkIn(first)}`), 403, 'FORBIDDEN');
    await expectConfirmed(A, linkIn(mails[1]!), secretId);
    // Mailed and recorded: a replay now answers 200 and mails nothing.
    expect((await postJson(`${A}/web2/permit`, body)).status).toBe(200);
    expect(permitMailsFor(permitId)).toHaveLength(2);
  });

  it('the mail server down at request time: 503 until it is back, then the exact retry mails the link once, and it confirms', async () => {
    const { cluster, A, B } = scene;
    const { secretId, body, permitId } = await delegateRequest();

    await cluster.mailbox.down();
    try {
      expectApiError(await postJson(`${A}/web2/permit`, body), 503, 'MAIL_UNAVAILABLE');
      // The coordinator gave its mailing lease up: the retry tries at once (and fails the same way).
      expectApiError(await postJson(`${B}/web2/permit`, body), 503, 'MAIL_UNAVAILABLE');
    } finally {
      await cluster.mailbox.up();
    }

    const retry = await postJson<{ permitId: string }>(`${B}/web2/permit`, body);
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    const mails = permitMailsFor(permitId);
    expect(mails).toHaveLength(1);
    await expectConfirmed(A, linkIn(mails[0]!), secretId);
    expect((await postJson(`${A}/web2/permit`, body)).status).toBe(200);
    expect(permitMailsFor(permitId)).toHaveLength(1);
  });

  it('a replay while the link is being mailed: 503 and no second link; no other coordinator can end the mailing', async () => {
    const { cluster, A, B } = scene;
    const { secretId, body, permitId } = await delegateRequest();

    const hold = holdNextPermitMail();
    const answer = postJson(`${A}/web2/permit`, body);
    const first = await hold.arrived;
    // Coordinator B, with the live token hash from its replica, cannot end A's mailing lease (which
    // would let a replay replace A's link by one of its own).
    const stored = await waitFor(async () => (await cluster.members[1]!.state.get('permit', permitId))?.body as { tokenHash: string } | undefined, { timeoutMs: 5000 });
    const creatorB = cluster.members[1]!.creator as CreatorService;
    expect(await creatorB.call('permitMailed', { requestId: body.requestId, tokenHash: stored.tokenHash, sent: false })).toEqual({ current: false });

    // The replay waits a while for A's mail, which the server still holds: not a 200 for a link that
    // has not gone out, and not a second link that would cut A's off.
    expectApiError(await postJson(`${B}/web2/permit`, body), 503, 'MAIL_UNAVAILABLE');
    hold.release();
    expect((await answer).status).toBe(201);
    const replayed = await postJson(`${B}/web2/permit`, body);
    expect(replayed.status, JSON.stringify(replayed.body)).toBe(200);
    expect(permitMailsFor(permitId)).toHaveLength(1);
    await expectConfirmed(B, linkIn(first), secretId);
  });
});
