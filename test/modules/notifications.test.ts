// Notifications over HTTP on both databases: send (to oneself; to users and groups with
// NOTIFICATION_SEND, group fan-out direct and through business roles), list (own only, filter and
// paging, newest first, validity windows, unread count), setread (one, many, all, unread again),
// delete (dismissible only), nobody reaching another user's notifications, notifyUsers as other
// modules call it, and jobs notifying their owner when they finish, fail or are cancelled.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import { assertError, assertOk, runnerFor, send, waitForJob, type Who } from '../jobs/helpers.ts';
import { notifyUsers } from '../../src/modules/notifications/service.ts';
import { createJob } from '../../src/jobs/store.ts';
import { permissionsOfRoles } from '../../src/access/access.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';

const json = (body: unknown) => ({
  body: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

describe('notifications', () => {
  let h: Harness;
  let other: Harness;
  const admin: Who = { user: 'admin', password: 'admin-password-1' };
  const ann: Who = { user: 'ann', password: 'ann-password-1' };
  const bob: Who = { user: 'bob', password: 'bob-password-1' };
  const cid: Who = { user: 'cid', password: 'cid-password-1' };
  const sender: Who = { user: 'sender', password: 'sender-password-1' };
  let annId: number;
  let bobId: number;
  let cidId: number;

  const sendAs = (who: Who, data: unknown) => send(h, '/notification.send', { who, ...json({ data }) });
  const list = (who: Who, body: unknown = {}) => send(h, '/notification.list', { who, ...json(body) });
  const titles = async (who: Who, body: unknown = {}) =>
    (assertOk(await list(who, body)) as { title: string }[]).map((n) => n.title);

  before(async () => {
    h = await startHarness();
    other = await startHarness({ shareDbWith: h });
    annId = await h.newUser(ann.user, ann.password);
    bobId = await h.newUser(bob.user, bob.password);
    cidId = await h.newUser(cid.user, cid.password);
    // A custom role would need the catalogue: ADMIN_WO_USER_MGMT holds NOTIFICATION_SEND.
    await h.newUser(sender.user, sender.password, ['ADMIN_WO_USER_MGMT']);
    const g = await h.db.query<{ id: number }>(
      `INSERT INTO user_groups (partition_id, unique_name) VALUES ($1, 'pricing') RETURNING id`,
      [h.partitionId],
    );
    const groupId = g.rows[0]!.id;
    await h.db.query('INSERT INTO user_group_members (partition_id, user_id, group_id) VALUES ($1, $2, $3)', [
      h.partitionId,
      annId,
      groupId,
    ]);
    // bob is in the group through a business role; cid is not in it.
    const br = await h.db.query<{ id: number }>(
      `INSERT INTO business_roles (partition_id, unique_name) VALUES ($1, 'analyst') RETURNING id`,
      [h.partitionId],
    );
    const brId = br.rows[0]!.id;
    await h.db.query(
      'INSERT INTO business_role_groups (partition_id, business_role_id, group_id) VALUES ($1, $2, $3)',
      [h.partitionId, brId, groupId],
    );
    await h.db.query(
      'INSERT INTO user_business_roles (partition_id, user_id, business_role_id) VALUES ($1, $2, $3)',
      [h.partitionId, bobId, brId],
    );
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  test('without credentials: 401', async () => {
    for (const op of ['send', 'list', 'setread', 'delete']) {
      const r = await fetch(`${h.url}${h.config.basePath}/${h.partition}/notification.${op}`, {
        method: 'POST',
      });
      assert.equal(r.status, 401, op);
    }
  });

  test('a user notifies himself without any permission; the list shows it with its fields', async () => {
    const r = assertOk(
      await sendAs(cid, {
        notification: {
          title: 'cid self',
          message: 'hello',
          source: 'test',
          status: 'WARNING',
          topic: 'GROOVY',
          dueDate: '2030-01-02T03:04:05Z',
          payload: { a: [1, 2] },
        },
      }),
    );
    assert.deepEqual(r, [{ sent: 1, recipients: ['cid'] }]);
    const rows = assertOk(await list(cid));
    assert.equal(rows.length, 1);
    const n = rows[0];
    assert.equal(n.title, 'cid self');
    assert.equal(n.message, 'hello');
    assert.equal(n.source, 'test');
    assert.equal(n.status, 'WARNING');
    assert.equal(n.topic, 'GROOVY');
    assert.equal(n.actionType, 'INFO_MESSAGE');
    assert.equal(n.dismissible, true);
    assert.equal(n.read, false);
    assert.equal(n.readDate, null);
    assert.equal(n.userId, cidId);
    assert.equal(n.createdBy, cidId);
    assert.deepEqual(n.payload, { a: [1, 2] });
    assert.match(n.typedId, /^\d+\.NTF$/);
    assert.equal(new Date(n.dueDate).toISOString(), '2030-01-02T03:04:05.000Z');
  });

  test('empty text is no value: status, topic and actionType take their defaults, message and source none', async () => {
    assertOk(
      await sendAs(cid, {
        notification: { title: 'cid empty', status: '', topic: '', actionType: '', message: '', source: '' },
      }),
    );
    const [n] = assertOk(await list(cid, { data: { title: 'cid empty' } }));
    assert.deepEqual([n.status, n.topic, n.actionType], ['INFO', 'SYSTEM_NOTIFICATION', 'INFO_MESSAGE']);
    assert.deepEqual([n.message, n.source], [null, null]);
    const none = {
      _constructor: 'AdvancedCriteria',
      operator: 'and',
      criteria: [
        { fieldName: 'title', operator: 'equals', value: 'cid empty' },
        { fieldName: 'message', operator: 'isNull' },
      ],
    };
    assert.equal(assertOk(await list(cid, { data: none })).length, 1);
  });

  test('sending to others needs NOTIFICATION_SEND (403), even to one other user', async () => {
    assertError(await sendAs(cid, { notification: { title: 'x' }, recipients: { users: ['ann'] } }), 403, -3);
    // Naming only oneself is still oneself.
    assertOk(await sendAs(cid, { notification: { title: 'to me by name' }, recipients: { users: ['CID'] } }));
    assert.ok((await titles(cid)).includes('to me by name'));
    assert.ok(!(await titles(ann)).includes('x'));
  });

  test('a group send fans out to each member (direct and through a business role), once each', async () => {
    const r = assertOk(
      await sendAs(sender, {
        notification: { title: 'group news', status: 'INFO' },
        recipients: { users: ['ann'], groups: ['pricing'] },
      }),
    );
    assert.deepEqual(r, [{ sent: 2, recipients: ['ann', 'bob'] }]);
    assert.deepEqual(
      (await titles(ann)).filter((t) => t === 'group news'),
      ['group news'],
    );
    assert.ok((await titles(bob)).includes('group news'));
    assert.ok(!(await titles(cid)).includes('group news'));
    assert.ok(!(await titles(sender)).includes('group news'));
  });

  test('unknown recipients and bad fields are clear errors, and nothing is sent', async () => {
    const u = await sendAs(sender, {
      notification: { title: 'n' },
      recipients: { users: ['ann', 'nobody'] },
    });
    assertError(u, 404, -1);
    assert.ok(u.body.response.errors['data.recipients.users']);
    assert.match(u.body.response.data, /nobody/);
    const g = await sendAs(sender, { notification: { title: 'n' }, recipients: { groups: ['nogroup'] } });
    assertError(g, 404, -1);
    assert.ok(g.body.response.errors['data.recipients.groups']);
    // Unknown users and unknown groups in one send: both named at once.
    const both = await sendAs(sender, {
      notification: { title: 'n' },
      recipients: { users: ['nobody'], groups: ['nogroup'] },
    });
    assertError(both, 404, -1);
    assert.deepEqual(Object.keys(both.body.response.errors).sort(), [
      'data.recipients.groups',
      'data.recipients.users',
    ]);
    assert.match(both.body.response.data, /nobody.*nogroup/);
    // Recipients given but empty name nobody: a -4, not a note to the sender.
    for (const recipients of [{ users: [] }, { users: [], groups: [] }, { groups: [] }, {}]) {
      const empty = await sendAs(sender, { notification: { title: 'to nobody' }, recipients });
      assertError(empty, 400, -4);
      assert.ok(empty.body.response.errors['data.recipients'], JSON.stringify(empty.body));
    }
    assert.ok(!(await titles(sender)).includes('to nobody'));
    // Text the database cannot hold (NUL) is a -4 naming where it is, and nothing is sent.
    const nul = await sendAs(sender, { notification: { title: 'n', payload: { note: 'a\u0000b' } } });
    assertError(nul, 400, -4);
    assert.ok(nul.body.response.errors['data.notification.payload.note'], JSON.stringify(nul.body));
    // An unpaired surrogate (no UTF-8 form) and a number past a double are refused too.
    const rawSend = (text: string) =>
      send(h, '/notification.send', {
        who: sender,
        body: text,
        headers: { 'content-type': 'application/json' },
      });
    for (const [payload, field] of [
      ['{"s":"\\ud800"}', 'data.notification.payload.s'],
      ['{"n":[1e400]}', 'data.notification.payload.n.0'],
      ['null,"message":"x\\udc00"', 'data.notification.message'],
    ]) {
      const r = await rawSend(`{"data":{"notification":{"title":"bad","payload":${payload}}}}`);
      assertError(r, 400, -4);
      assert.ok(r.body.response.errors[field!], JSON.stringify(r.body));
    }
    const title = await rawSend('{"data":{"notification":{"title":"hi \\ud800"}}}');
    assertError(title, 400, -4);
    assert.ok(title.body.response.errors['data.notification.title'], JSON.stringify(title.body));
    assert.ok(!(await titles(sender)).some((t) => t.startsWith('hi') || t === 'bad'));
    const cases: [unknown, string][] = [
      [{}, 'data.notification.title'],
      [{ title: '  ' }, 'data.notification.title'],
      [{ title: 'x', status: 'LOUD' }, 'data.notification.status'],
      [{ title: 'x', validFrom: 'tomorrow' }, 'data.notification.validFrom'],
      [{ title: 'x', validFrom: '2030-01-02', validUntil: '2030-01-01' }, 'data.notification.validUntil'],
      [{ title: 'x', dismissible: 'no' }, 'data.notification.dismissible'],
      [{ title: 'x', colour: 'red' }, 'data.notification.colour'],
      [{ title: 'x', read: true }, 'data.notification.read'],
      [{ title: 7 }, 'data.notification.title'],
      ['text', 'data.notification'],
    ];
    for (const [notification, field] of cases) {
      const r = await sendAs(ann, { notification });
      assertError(r, 400, -4);
      assert.ok(r.body.response.errors[field], `${field}: ${JSON.stringify(r.body)}`);
    }
    const extra = await send(h, '/notification.send', {
      who: ann,
      ...json({ data: { notification: {}, x: 1 } }),
    });
    assertError(extra, 400, -4);
    assert.ok(!(await titles(ann)).includes('n'));
  });

  test('the list is newest first, filters and pages with the engine, and counts unread', async () => {
    for (let i = 1; i <= 5; i++) assertOk(await sendAs(ann, { notification: { title: `page ${i}` } }));
    const all = await list(ann, {
      data: {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [{ fieldName: 'title', operator: 'startsWith', value: 'page' }],
      },
      startRow: 1,
      endRow: 3,
    });
    const rows = assertOk(all);
    assert.deepEqual(
      rows.map((n: { title: string }) => n.title),
      ['page 4', 'page 3'],
    );
    assert.equal(all.body.response.totalRows, 5);
    assert.equal(all.body.response.startRow, 1);
    assert.equal(all.body.response.endRow, 3);
    const unread = all.body.response.unreadCount as number;
    assert.ok(unread >= 6);
    const sorted = assertOk(
      await list(ann, {
        data: { fieldName: 'title', operator: 'iContains', value: 'PAGE' },
        sortBy: 'title',
      }),
    );
    assert.deepEqual(
      sorted.map((n: { title: string }) => n.title),
      ['page 1', 'page 2', 'page 3', 'page 4', 'page 5'],
    );
    // An empty sortBy asks for no order: newest first, as without one.
    const unsorted = assertOk(
      await list(ann, { data: { fieldName: 'title', operator: 'startsWith', value: 'page' }, sortBy: [] }),
    );
    assert.deepEqual(
      unsorted.map((n: { title: string }) => n.title),
      ['page 5', 'page 4', 'page 3', 'page 2', 'page 1'],
    );
    const arrays = assertOk(await list(ann, { data: { title: 'page 2' }, valueFields: ['title', 'read'] }));
    assert.deepEqual(arrays, [['page 2', false]]);
    // distinct rows sort by their own fields when no sortBy is given (not by the newest-first default)
    const distinct = await list(ann, {
      data: { fieldName: 'title', operator: 'startsWith', value: 'page' },
      valueFields: ['title'],
      distinctResults: true,
      endRow: 2,
    });
    assert.deepEqual(assertOk(distinct), [['page 1'], ['page 2']]);
    assert.equal(distinct.body.response.totalRows, 5);
    assertError(await list(ann, { data: { fieldName: 'nope', operator: 'equals', value: 1 } }), 400, -4);
    assertError(await list(ann, { data: { fieldName: 'title', operator: 'bogus', value: 1 } }), 400, -4);
    assertError(await list(ann, { sortBy: 'password' }), 400, -4);
  });

  test('validity windows: only current ones by default; a filter on validFrom/validUntil sees all', async () => {
    const day = 24 * 3600 * 1000;
    const iso = (ms: number) => new Date(Date.now() + ms).toISOString();
    assertOk(await sendAs(bob, { notification: { title: 'future', validFrom: iso(day) } }));
    assertOk(await sendAs(bob, { notification: { title: 'expired', validUntil: iso(-day) } }));
    assertOk(
      await sendAs(bob, { notification: { title: 'current', validFrom: iso(-day), validUntil: iso(day) } }),
    );
    const r = await list(bob);
    const now = (assertOk(r) as { title: string }[]).map((n) => n.title);
    assert.ok(now.includes('current'));
    assert.ok(!now.includes('future'));
    assert.ok(!now.includes('expired'));
    const unreadNow = r.body.response.unreadCount as number;
    assert.equal(unreadNow, now.length);
    const future = await titles(bob, {
      data: { fieldName: 'validFrom', operator: 'greaterThan', value: iso(0) },
    });
    assert.deepEqual(future, ['future']);
    const expired = await titles(bob, {
      data: {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [
          { fieldName: 'validUntil', operator: 'notNull' },
          { fieldName: 'validUntil', operator: 'lessThan', value: iso(0) },
        ],
      },
    });
    // lessThan matches nulls by default (conventions), hence notNull above.
    assert.deepEqual(expired, ['expired']);
    // A field comparison naming validUntil as its other field speaks of validity too.
    const compared = await titles(bob, {
      data: {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [
          { fieldName: 'title', operator: 'equals', value: 'expired' },
          { fieldName: 'createDate', operator: 'greaterThanField', value: 'validUntil' },
        ],
      },
    });
    assert.deepEqual(compared, ['expired']);
  });

  test('setread: one by id or typedId, many, all; unread again with read false; 404 for others', async () => {
    await h.db.query('DELETE FROM notifications WHERE partition_id = $1 AND user_id = $2', [
      h.partitionId,
      cidId,
    ]);
    for (const t of ['r1', 'r2', 'r3', 'r4']) assertOk(await sendAs(cid, { notification: { title: t } }));
    const rows = assertOk(await list(cid, { sortBy: 'title' })) as { id: number; typedId: string }[];
    const [r1, r2, r3] = rows;
    const one = assertOk(
      await send(h, '/notification.setread', { who: cid, ...json({ data: { id: r1!.id } }) }),
    );
    assert.equal(one[0].read, true);
    assert.ok(one[0].readDate);
    assert.equal(one[0].version, 1);
    const again = assertOk(
      await send(h, '/notification.setread', { who: cid, ...json({ data: { typedId: r1!.typedId } }) }),
    );
    assert.equal(again[0].readDate, one[0].readDate, 'marking twice keeps the first read date');
    assert.equal(again[0].version, 1);
    const listed = await list(cid);
    assert.equal(listed.body.response.unreadCount, 3);
    const many = assertOk(
      await send(h, '/notification.setread', { who: cid, ...json({ data: { ids: [r2!.id, r3!.typedId] } }) }),
    );
    assert.equal(many.length, 2);
    assert.equal((await list(cid)).body.response.unreadCount, 1);
    // Another user's notification: 404, and the whole request changes nothing.
    const annRow = (assertOk(await list(ann)) as { id: number }[])[0]!;
    assertError(
      await send(h, '/notification.setread', { who: cid, ...json({ data: { ids: [r1!.id, annRow.id] } }) }),
      404,
      -1,
    );
    assertError(
      await send(h, '/notification.setread', { who: admin, ...json({ data: { id: annRow.id } }) }),
      404,
      -1,
    );
    const annAfter = (assertOk(await list(ann)) as { id: number; read: boolean }[]).find(
      (n) => n.id === annRow.id,
    );
    assert.equal(annAfter!.read, false);
    // `all` reaches what the list shows: one scheduled for later is not read before it shows.
    assertOk(await sendAs(cid, { notification: { title: 'later', validFrom: '2030-01-01T00:00:00Z' } }));
    const all = assertOk(
      await send(h, '/notification.setread', { who: cid, ...json({ data: { all: true } }) }),
    );
    assert.deepEqual(all, [{ updated: 1 }]);
    assert.equal((await list(cid)).body.response.unreadCount, 0);
    const scheduled = { data: { fieldName: 'validFrom', operator: 'notNull' } };
    const later = assertOk(await list(cid, scheduled)) as { title: string; read: boolean }[];
    assert.deepEqual(
      later.map((n) => [n.title, n.read]),
      [['later', false]],
    );
    const unread = assertOk(
      await send(h, '/notification.setread', { who: cid, ...json({ data: { id: r1!.id, read: false } }) }),
    );
    assert.equal(unread[0].read, false);
    assert.equal(unread[0].readDate, null);
    const unreadOnly = await titles(cid, { data: { read: false } });
    assert.deepEqual(unreadOnly, ['r1']);
    for (const data of [
      {},
      { id: 1, all: true },
      { all: false },
      { ids: [] },
      { id: 'abc' },
      { typedId: '5.P' },
      { x: 1 },
    ]) {
      assertError(await send(h, '/notification.setread', { who: cid, ...json({ data }) }), 400, -4);
    }
  });

  test("delete: own dismissible ones; a non-dismissible one is -4; another user's is 404", async () => {
    assertOk(
      await sendAs(sender, {
        notification: { title: 'sticky', dismissible: false },
        recipients: { users: ['cid'] },
      }),
    );
    assertOk(await sendAs(cid, { notification: { title: 'gone' } }));
    const rows = assertOk(await list(cid)) as { id: number; title: string }[];
    const sticky = rows.find((n) => n.title === 'sticky')!;
    const gone = rows.find((n) => n.title === 'gone')!;
    const refused = await send(h, '/notification.delete', {
      who: cid,
      ...json({ data: { ids: [gone.id, sticky.id] } }),
    });
    assertError(refused, 400, -4);
    assert.match(refused.body.response.data, /cannot be dismissed/);
    assert.deepEqual(Object.keys(refused.body.response.errors), ['data.ids'], 'names the field given');
    assert.ok((await titles(cid)).includes('gone'), 'nothing deleted when one is refused');
    const annRow = (assertOk(await list(ann)) as { id: number }[])[0]!;
    assertError(
      await send(h, '/notification.delete', { who: cid, ...json({ data: { id: annRow.id } }) }),
      404,
      -1,
    );
    assertError(
      await send(h, '/notification.delete', { who: admin, ...json({ data: { id: annRow.id } }) }),
      404,
      -1,
    );
    const deleted = assertOk(
      await send(h, '/notification.delete', { who: cid, ...json({ data: { id: gone.id } }) }),
    );
    assert.equal(deleted[0].title, 'gone');
    assert.ok(!(await titles(cid)).includes('gone'));
    assertOk(await sendAs(cid, { notification: { title: 'not yet', validFrom: '2031-01-01T00:00:00Z' } }));
    const all = assertOk(
      await send(h, '/notification.delete', { who: cid, ...json({ data: { all: true } }) }),
    );
    assert.ok(all[0].deleted >= 1);
    assert.deepEqual(await titles(cid), ['sticky']);
    const scheduled = {
      data: { fieldName: 'validFrom', operator: 'greaterThan', value: '2030-06-01T00:00:00Z' },
    };
    assert.deepEqual(await titles(cid, scheduled), ['not yet'], 'one not valid yet is not deleted by all');
  });

  test('admins see only their own notifications; the general operations refuse NTF', async () => {
    assert.ok(!(await titles(admin)).some((t) => t === 'group news' || t === 'cid self'));
    assertError(await send(h, '/fetch/NTF', { who: admin, ...json({}) }), 400, -4);
    assertError(await send(h, '/add/NTF', { who: admin, ...json({ data: { title: 'x' } }) }), 400, -4);
  });

  test("notifyUsers: one insert in the caller's transaction; foreign and duplicate ids are skipped", async () => {
    const foreign = await other.newUser('foreigner', 'foreigner-password-1');
    await h.db.transaction(async (tx) => {
      await notifyUsers(
        tx,
        h.partitionId,
        [annId, annId, bobId, foreign],
        { title: 'from a module', topic: 'WORKFLOW' },
        cidId,
      );
    });
    assert.deepEqual(
      (await titles(ann)).filter((t) => t === 'from a module'),
      ['from a module'],
    );
    assert.ok((await titles(bob)).includes('from a module'));
    const r = await other.db.query('SELECT count(*)::int AS n FROM notifications WHERE user_id = $1', [
      foreign,
    ]);
    assert.equal(r.rows[0]!.n, 0);
    // A rolled-back transaction leaves nothing behind; a bad input throws a -4.
    await assert.rejects(
      h.db.transaction(async (tx) => {
        await notifyUsers(tx, h.partitionId, [annId], { title: 'rolled back' });
        throw new Error('abort');
      }),
    );
    assert.ok(!(await titles(ann)).includes('rolled back'));
    await assert.rejects(notifyUsers(h.db, h.partitionId, [annId], { title: '' }), /title/);
  });

  describe('jobs notify their owner', () => {
    let runner: JobRunner;
    before(() => {
      runner = runnerFor(h, {
        NTF_OK: { maxAttempts: 1, run: () => Promise.resolve({ ok: true }) },
        NTF_FAIL: {
          maxAttempts: 1,
          run: () => {
            throw new Error('secret internals');
          },
        },
      }).start();
    });
    after(async () => {
      await runner.stop();
    });

    const jobBy = (kind: string, name: string) =>
      createJob(
        h.db,
        {
          partitionId: h.partitionId,
          partition: h.partition,
          userId: annId,
          loginName: 'ann',
          roles: [],
          groups: [],
          admin: false,
          permissions: permissionsOfRoles([]),
          via: 'basic',
          restriction: null,
        },
        { jobName: name, trackerType: kind, parameters: {}, maxAttempts: 1 },
      );

    test('finished and failed', async () => {
      const ok = await jobBy('NTF_OK', 'nightly ok');
      const bad = await jobBy('NTF_FAIL', 'nightly bad');
      await waitForJob(h, ok.id);
      await waitForJob(h, bad.id);
      const rows = assertOk(await list(ann, { data: { topic: 'JOB' } })) as Record<string, any>[];
      const okN = rows.find((n) => n.source === `${ok.id}.JST`)!;
      assert.equal(okN.title, 'Job nightly ok finished');
      assert.equal(okN.status, 'SUCCESS');
      assert.equal(okN.payload.status, 'FINISHED');
      const badN = rows.find((n) => n.source === `${bad.id}.JST`)!;
      assert.equal(badN.title, 'Job nightly bad failed');
      assert.equal(badN.status, 'ERROR');
      assert.ok(!JSON.stringify(badN).includes('secret internals'));
    });

    test('cancelled before it ran', async () => {
      const job = await createJob(
        h.db,
        {
          partitionId: h.partitionId,
          partition: h.partition,
          userId: annId,
          loginName: 'ann',
          roles: [],
          groups: [],
          admin: false,
          permissions: permissionsOfRoles([]),
          via: 'basic',
          restriction: null,
        },
        // A kind no runner serves stays queued until cancelled.
        { jobName: 'never runs', trackerType: 'NTF_NONE', parameters: {}, maxAttempts: 1 },
      );
      assertOk(await send(h, `/admin.canceljst/${job.id}`, { who: ann }));
      const rows = assertOk(await list(ann, { data: { source: `${job.id}.JST` } })) as Record<string, any>[];
      assert.equal(rows.length, 1);
      assert.equal(rows[0]!.title, 'Job never runs was cancelled');
      assert.equal(rows[0]!.status, 'WARNING');
      // Cancelling again notifies nobody twice.
      await send(h, `/admin.canceljst/${job.id}`, { who: ann });
      assert.equal((assertOk(await list(ann, { data: { source: `${job.id}.JST` } })) as unknown[]).length, 1);
    });
  });
});
