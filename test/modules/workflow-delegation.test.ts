// Workflow delegation over HTTP on both databases: every transition of the interface's state table
// (delete before activation, delete refused once activated, enddate), status derived from the dates
// at read time, update of the note only, each checkdates problem (and add refusing it), who may act
// on whose delegations, fetch with a status filter, and partition isolation.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import { assertError, assertOk, send, type Who } from '../jobs/helpers.ts';

const json = (body: unknown) => ({
  body: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

const day = (offset: number): string => {
  const d = new Date();
  d.setUTCDate(d.getUTCDate() + offset);
  return d.toISOString().slice(0, 10);
};

describe('workflow delegation', () => {
  let h: Harness;
  let other: Harness;
  const admin: Who = { user: 'admin', password: 'admin-password-1' };
  const who = (user: string): Who => ({ user, password: `${user}-password-1` });
  const [ann, bob, cid, dan, wfadmin] = ['ann', 'bob', 'cid', 'dan', 'wfadmin'].map(who) as [
    Who,
    Who,
    Who,
    Who,
    Who,
  ];

  const call = (w: Who, op: string, body: unknown = {}) =>
    send(h, `/workflowdelegationmanager.${op}`, { who: w, ...json(body) });
  const add = async (w: Who, data: Record<string, unknown>) => assertOk(await call(w, 'add', { data }))[0];
  const problems = async (w: Who, data: Record<string, unknown>) =>
    (assertOk(await call(w, 'checkdates', { data })) as { field: string; code: string }[]).map(
      (p) => `${p.field}:${p.code}`,
    );

  before(async () => {
    h = await startHarness();
    other = await startHarness({ shareDbWith: h });
    for (const u of ['ann', 'bob', 'cid', 'dan']) await h.newUser(u, `${u}-password-1`);
    await h.newUser('wfadmin', 'wfadmin-password-1', ['WF_ADMIN']);
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  test('not yet activated (start in the future): INITIALIZED, delete removes it and answers it', async () => {
    const d = await add(ann, { delegate: 'bob', startDate: day(10), endDate: day(12), note: 'later' });
    assert.equal(d.status, 'INITIALIZED');
    assert.equal(d.delegator, 'ann');
    assert.equal(d.delegate, 'bob');
    assert.equal(d.startDate, day(10));
    assert.equal(d.note, 'later');
    // Only an activated delegation can be end-dated.
    assertError(await call(ann, 'enddate', { data: { typedId: d.typedId } }), 400, -4);
    // A field the delegation has not is refused, naming it; the delegation as fetched is taken.
    const unknown = await call(ann, 'delete', { data: { typedId: d.typedId, foo: 1 } });
    assertError(unknown, 400, -4);
    assert.ok(unknown.body.response.errors.foo, JSON.stringify(unknown.body));
    const deleted = assertOk(await call(ann, 'delete', { data: d }))[0];
    assert.equal(deleted.typedId, d.typedId);
    assert.equal(deleted.status, 'INITIALIZED');
    assertError(await call(ann, 'delete', { data: { typedId: d.typedId } }), 404, -1);
  });

  test('ACTIVATED: delete is refused, enddate ends it and answers it; ENDDATED cannot be ended again', async () => {
    const d = await add(ann, { delegate: 'bob', startDate: day(0), endDate: day(30) });
    assert.equal(d.status, 'ACTIVATED');
    // The interface's spelling of the statuses (Activated) filters as well as the records' own.
    for (const value of ['Activated', 'ACTIVATED', ['Activated', 'EndDated']]) {
      const found = assertOk(
        await call(ann, 'fetch', {
          data: {
            _constructor: 'AdvancedCriteria',
            operator: 'and',
            criteria: [
              { fieldName: 'status', operator: Array.isArray(value) ? 'inSet' : 'equals', value },
              { fieldName: 'id', operator: 'equals', value: d.id },
            ],
          },
        }),
      );
      assert.equal(found.length, 1, JSON.stringify(value));
    }
    const refused = await call(ann, 'delete', { data: { typedId: d.typedId } });
    assertError(refused, 400, -4);
    assert.match(refused.body.response.data, /ACTIVATED cannot be deleted/);
    assert.ok(refused.body.response.errors.typedId, JSON.stringify(refused.body));
    // Named by id, the refusal names id.
    const byId = await call(ann, 'delete', { data: { id: d.id } });
    assertError(byId, 400, -4);
    assert.deepEqual(Object.keys(byId.body.response.errors), ['id']);
    // bob (the delegate) cannot end it; the delegator can.
    assertError(await call(bob, 'enddate', { data: { typedId: d.typedId } }), 403, -3);
    // An end-date changes the end and the note only: another date is refused, naming it, and nothing ends.
    const moved = await call(ann, 'enddate', { data: { typedId: d.typedId, startDate: day(-5) } });
    assertError(moved, 400, -4);
    assert.ok(moved.body.response.errors.startDate, JSON.stringify(moved.body));
    const ended = assertOk(
      await call(ann, 'enddate', { data: { typedId: d.typedId, note: 'back early' } }),
    )[0];
    assert.equal(ended.status, 'ENDDATED');
    assert.equal(ended.note, 'back early');
    assert.equal(ended.endDate, day(0));
    assert.ok(ended.endedAt);
    assert.equal(ended.version, d.version + 1);
    assertError(await call(ann, 'enddate', { data: { typedId: d.typedId } }), 400, -4);
    const again = await call(ann, 'enddate', { data: { id: ended.id } });
    assertError(again, 400, -4);
    assert.deepEqual(Object.keys(again.body.response.errors), ['id']);
    assertError(await call(ann, 'delete', { data: { id: ended.id } }), 400, -4);
    // Record history, in the same transactions: the add, then the end.
    const hist = await h.db.query<{ action: string; changed_fields: string[]; actor_login: string }>(
      `SELECT action, changed_fields, actor_login FROM record_history
        WHERE partition_id = $1 AND type_code = 'WFDG' AND record_id = $2 ORDER BY id`,
      [h.partitionId, d.id],
    );
    assert.deepEqual(
      hist.rows.map((r) => [r.action, r.actor_login, r.changed_fields.includes('endedAt')]),
      [
        ['ADD', 'ann', false],
        ['UPDATE', 'ann', true],
      ],
    );
  });

  test('status is derived from the dates when read: past its end date it is ENDDATED without any call', async () => {
    const d = await add(cid, { delegate: 'dan', startDate: day(1), endDate: day(2) });
    assert.equal(d.status, 'INITIALIZED');
    // Time passes: move the dates (the server has no timer; the view derives the status).
    await h.db.query(
      `UPDATE workflow_delegations SET start_date = $3::date, end_date = $3::date WHERE partition_id = $1 AND id = $2`,
      [h.partitionId, d.id, day(0)],
    );
    const [now] = assertOk(await call(cid, 'fetch', { data: { id: d.id } }));
    assert.equal(now.status, 'ACTIVATED');
    await h.db.query(
      `UPDATE workflow_delegations SET start_date = $3::date, end_date = $4::date WHERE partition_id = $1 AND id = $2`,
      [h.partitionId, d.id, day(-5), day(-1)],
    );
    const [later] = assertOk(await call(cid, 'fetch', { data: { id: d.id } }));
    assert.equal(later.status, 'ENDDATED');
    // Filter on status: simple criteria compare case-insensitively (the interface writes "EndDated").
    const byStatus = assertOk(await call(cid, 'fetch', { data: { status: 'EndDated' } }));
    assert.deepEqual(
      byStatus.map((r: { id: number }) => r.id),
      [d.id],
    );
    const advanced = assertOk(
      await call(wfadmin, 'fetch', { data: { fieldName: 'status', operator: 'equals', value: 'ENDDATED' } }),
    );
    assert.ok(advanced.some((r: { id: number }) => r.id === d.id));
  });

  test('a status filter upper-cases the values it compares, not regular expressions, patterns or field names', async () => {
    // One INITIALIZED delegation whose note is its status as stored.
    const d = await add(ann, {
      delegate: 'cid',
      startDate: day(600),
      endDate: day(601),
      note: 'INITIALIZED',
    });
    const ids = async (status: Record<string, unknown>) =>
      (
        assertOk(
          await call(ann, 'fetch', {
            data: {
              _constructor: 'AdvancedCriteria',
              operator: 'and',
              criteria: [{ fieldName: 'startDate', operator: 'equals', value: day(600) }, status],
            },
          }),
        ) as { id: number }[]
      ).map((r) => r.id);
    const status = (operator: string, value: unknown) => ids({ fieldName: 'status', operator, value });
    // Values compared: any case.
    assert.deepEqual(await status('equals', 'Initialized'), [d.id]);
    assert.deepEqual(await status('inSet', ['initialized', 'x']), [d.id]);
    assert.deepEqual(await status('notEqual', 'initialized'), []);
    assert.deepEqual(await ids({ fieldName: 'status', operator: 'between', start: 'a', end: 'j' }), [d.id]);
    // A regular expression as written (regexp is case-sensitive; `\w` is not `\W`).
    assert.deepEqual(await status('regexp', '^\\w+$'), [d.id]);
    assert.deepEqual(await status('regexp', '^[a-z]+$'), []);
    assert.deepEqual(await status('regexp', '^[A-Z]+$'), [d.id]);
    assert.deepEqual(await status('iregexp', '^init'), [d.id]);
    assert.deepEqual(await status('matchesPattern', 'init*'), []);
    assert.deepEqual(await status('iMatchesPattern', 'init*'), [d.id]);
    // The …Field operators name another field, which keeps its name.
    assert.deepEqual(await status('equalsField', 'note'), [d.id]);
    assert.deepEqual(await status('notEqualField', 'note'), []);
    assertOk(await call(ann, 'delete', { data: { typedId: d.typedId } }));
  });

  test('update changes only the note (version checked when given)', async () => {
    const d = await add(dan, { delegate: 'cid', startDate: day(40), endDate: day(41), note: 'a' });
    const u = assertOk(
      await call(dan, 'update', {
        data: { typedId: d.typedId, note: 'b' },
        oldValues: { version: d.version },
      }),
    )[0];
    assert.equal(u.note, 'b');
    assert.equal(u.version, d.version + 1);
    assertError(
      await call(dan, 'update', {
        data: { typedId: d.typedId, note: 'c' },
        oldValues: { version: d.version },
      }),
      409,
      -1,
    );
    const other = await call(dan, 'update', { data: { typedId: d.typedId, startDate: day(50) } });
    assertError(other, 400, -4);
    assert.ok(other.body.response.errors.startDate);
    // ann neither gives nor receives it: to her it does not exist.
    const unseen = await call(ann, 'update', { data: { typedId: d.typedId, note: 'x' } });
    assertError(unseen, 404, -1);
    assert.ok(unseen.body.response.errors.typedId, JSON.stringify(unseen.body));
    const unknown = await call(dan, 'update', { data: { id: 999_999_999, note: 'x' } });
    assertError(unknown, 404, -1);
    assert.ok(unknown.body.response.errors.id, JSON.stringify(unknown.body));
    assertError(await call(cid, 'update', { data: { typedId: d.typedId, note: 'x' } }), 403, -3);
    assertError(await call(dan, 'update', { data: { note: 'x' } }), 400, -4);
    // No note: nothing to change, and the note kept (null clears it).
    const none = await call(dan, 'update', { data: { typedId: d.typedId } });
    assertError(none, 400, -4);
    assert.ok(none.body.response.errors.note);
    const both = await call(dan, 'update', {
      data: { typedId: d.typedId, id: Number(d.id) + 1000, note: 'x' },
    });
    assertError(both, 400, -4);
    assert.ok(both.body.response.errors.id);
    const badId = await call(dan, 'update', { data: { id: '1.P', note: 'x' } });
    assert.ok(badId.body.response.errors.id, JSON.stringify(badId.body));
    assert.equal(assertOk(await call(dan, 'fetch', { data: { id: d.id } }))[0].note, 'b');
    const cleared = assertOk(await call(dan, 'update', { data: { id: d.id, note: null } }))[0];
    assert.equal(cleared.note, null);
    assertOk(await call(dan, 'delete', { data: { typedId: d.typedId } }));
  });

  test('checkdates answers each problem without creating anything; add refuses the same', async () => {
    const base = { delegate: 'bob', startDate: day(100), endDate: day(105) };
    assert.deepEqual(await problems(ann, base), []);
    assert.deepEqual(await problems(ann, { startDate: day(100), endDate: day(105) }), ['delegate:REQUIRED']);
    assert.deepEqual(await problems(ann, { delegate: 'bob' }), ['startDate:REQUIRED', 'endDate:REQUIRED']);
    assert.deepEqual(await problems(ann, { ...base, startDate: '2030-02-30' }), ['startDate:INVALID_DATE']);
    assert.deepEqual(await problems(ann, { ...base, endDate: day(99) }), ['endDate:DATES_ORDER']);
    assert.deepEqual(await problems(ann, { ...base, startDate: day(-1) }), ['startDate:START_IN_PAST']);
    assert.deepEqual(await problems(ann, { ...base, delegate: 'ann' }), ['delegate:SELF']);
    assert.deepEqual(await problems(ann, { ...base, delegate: 'nobody' }), ['delegate:UNKNOWN_USER']);
    // Empty names are missing names, not unknown users (even for one who may not name a delegator).
    assert.deepEqual(await problems(ann, { ...base, delegate: '  ' }), ['delegate:REQUIRED']);
    assert.deepEqual(await problems(ann, { ...base, delegator: '' }), ['delegator:REQUIRED']);
    const empty = await call(ann, 'add', { data: { ...base, delegator: '' } });
    assertError(empty, 400, -4);
    assert.ok(empty.body.response.errors.delegator, JSON.stringify(empty.body));
    // A deactivated delegate cannot sign in to approve: refused (by add too, nothing created).
    await h.newUser('gone', 'gone-password-1');
    await h.db.query(`UPDATE users SET activated = false WHERE partition_id = $1 AND login_name = 'gone'`, [
      h.partitionId,
    ]);
    assert.deepEqual(await problems(ann, { ...base, delegate: 'gone' }), ['delegate:INACTIVE_USER']);
    const inactive = await call(ann, 'add', { data: { ...base, delegate: 'gone' } });
    assert.equal(inactive.status, 400, JSON.stringify(inactive.body));
    assert.ok(inactive.body.response.errors.delegate, JSON.stringify(inactive.body));
    // Nothing was created by any of these.
    assert.equal(assertOk(await call(ann, 'fetch', { data: { startDate: day(100) } })).length, 0);

    const first = await add(ann, base);
    assert.deepEqual(
      await problems(ann, { ...base, delegate: 'cid', startDate: day(105), endDate: day(110) }),
      ['startDate:OVERLAP'],
    );
    // Not overlapping: the day after.
    assert.deepEqual(
      await problems(ann, { ...base, delegate: 'cid', startDate: day(106), endDate: day(110) }),
      [],
    );
    // bob delegating back to ann in the same period closes a cycle; bob -> cid -> ann too.
    assert.deepEqual(await problems(bob, { delegate: 'ann', startDate: day(101), endDate: day(102) }), [
      'delegate:CYCLE',
    ]);
    await add(bob, { delegate: 'cid', startDate: day(101), endDate: day(103) });
    assert.deepEqual(await problems(cid, { delegate: 'ann', startDate: day(102), endDate: day(102) }), [
      'delegate:CYCLE',
    ]);
    // Outside the period there is no cycle.
    assert.deepEqual(await problems(cid, { delegate: 'ann', startDate: day(200), endDate: day(201) }), []);

    const overlap = await call(ann, 'add', { data: { ...base, delegate: 'cid' } });
    assertError(overlap, 400, -4);
    assert.match(overlap.body.response.errors.startDate.errorMessage, /^OVERLAP/);
    const past = await call(ann, 'add', { data: { ...base, startDate: day(-3) } });
    assertError(past, 400, -4);
    assert.ok(past.body.response.errors.startDate);
    assertError(await call(ann, 'add', { data: { ...base, delegate: 'nobody' } }), 404, -1);
    assertError(await call(ann, 'add', { data: { ...base, delegate: 'ann' } }), 400, -4);
    assertError(await call(ann, 'add', { data: { ...base, colour: 'red' } }), 400, -4);
    // A note no text column takes: checkdates refuses it as add does.
    for (const op of ['checkdates', 'add']) {
      const nul = await call(ann, op, { data: { ...base, delegate: 'dan', note: 'a\u0000b' } });
      assertError(nul, 400, -4);
      assert.ok(nul.body.response.errors.note, JSON.stringify(nul.body));
    }
    assertOk(await call(ann, 'delete', { data: { typedId: first.typedId } }));
  });

  test('a user who gives or receives a delegation is deactivated, not deleted (409); once it is gone, he is deleted', async () => {
    const eve = who('eve');
    const eveId = await h.newUser(eve.user, eve.password);
    const d = await add(eve, { delegate: 'ann', startDate: day(500), endDate: day(501) });
    const refused = await send(h, '/delete/U', { who: admin, ...json({ data: { typedId: `${eveId}.U` } }) });
    assertError(refused, 409, -1);
    assert.match(refused.body.response.data, new RegExp(`delegation ${d.typedId}: deactivate the user`));
    assert.equal(assertOk(await call(wfadmin, 'fetch', { data: { startDate: day(500) } })).length, 1);
    assertOk(await call(eve, 'delete', { data: { typedId: d.typedId } }));
    assertOk(await send(h, '/delete/U', { who: admin, ...json({ data: { typedId: `${eveId}.U` } }) }));
  });

  test('concurrent adds cannot close a cycle: of two crossing delegations (or three in a ring) one is refused', async () => {
    const ids: string[] = [];
    for (let k = 0; k < 6; k++) {
      const period = { startDate: day(400 + 10 * k), endDate: day(404 + 10 * k) };
      const ring: [Who, string][] =
        k % 2 === 0
          ? [
              [cid, 'dan'],
              [dan, 'cid'],
            ]
          : [
              [bob, 'cid'],
              [cid, 'dan'],
              [dan, 'bob'],
            ];
      const answers = await Promise.all(
        ring.map(([w, delegate]) => call(w, 'add', { data: { delegate, ...period } })),
      );
      const added = answers.filter((r) => r.status === 200);
      assert.equal(added.length, ring.length - 1, answers.map((r) => JSON.stringify(r.body)).join('\n'));
      for (const r of answers.filter((x) => x.status !== 200)) {
        assertError(r, 400, -4);
        assert.match(r.body.response.errors.delegate.errorMessage, /^CYCLE/);
      }
      ids.push(...added.map((r) => assertOk(r)[0].typedId as string));
    }
    for (const typedId of ids) assertOk(await call(wfadmin, 'delete', { data: { typedId } }));
  });

  test('delegating for someone else needs WORKFLOW_ADMIN; fetch shows own delegations, all for WF_ADMIN', async () => {
    const data = { delegator: 'dan', delegate: 'ann', startDate: day(300), endDate: day(301) };
    assertError(await call(bob, 'add', { data }), 403, -3);
    assertError(await call(bob, 'checkdates', { data }), 403, -3);
    const d = await add(wfadmin, data);
    assert.equal(d.delegator, 'dan');
    assert.equal(d.createdBy !== undefined, true);
    const mine = (w: Who) =>
      call(w, 'fetch', { data: { startDate: day(300) } }).then((r) => assertOk(r) as { id: number }[]);
    assert.equal((await mine(dan)).length, 1); // the delegator
    assert.equal((await mine(ann)).length, 1); // the delegate
    assert.equal((await mine(bob)).length, 0);
    assert.equal((await mine(wfadmin)).length, 1);
    // The delegator (or an admin) manages it; the delegate cannot delete it.
    assertError(await call(ann, 'delete', { data: { typedId: d.typedId } }), 403, -3);
    assertOk(await call(wfadmin, 'delete', { data: { typedId: d.typedId } }));
    // The general operations are refused for WFDG.
    assertError(await send(h, '/fetch/WFDG', { who: admin, ...json({}) }), 400, -4);
    const anonymous = await h.call('/workflowdelegationmanager.fetch', { body: {} });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.response.status, -7);
    const anonymousWf = await h.call('/workflowsmanager.fetch', { body: {} });
    assert.equal(anonymousWf.status, 401);
  });

  test("someone who neither gives nor receives a delegation gets 'not found', as for an unknown id", async () => {
    const d = await add(ann, { delegate: 'bob', startDate: day(400), endDate: day(401) });
    const answers = async (typedId: string) => {
      const out: unknown[] = [];
      for (const [op, data] of [
        ['update', { typedId, note: 'x' }],
        ['delete', { typedId }],
        ['enddate', { typedId }],
      ] as const) {
        const r = await call(cid, op, { data });
        out.push([
          r.status,
          r.body.response.status,
          String(r.body.response.data).replace(typedId.split('.')[0]!, '<id>'),
        ]);
      }
      return out;
    };
    const theirs = await answers(d.typedId);
    assert.deepEqual(theirs, await answers('999999999.WFDG'));
    assert.ok(theirs.every((a) => (a as unknown[])[0] === 404));
    // The delegate still learns why he may not (he sees it), and the delegator removes it.
    assertError(await call(bob, 'delete', { data: { typedId: d.typedId } }), 403, -3);
    assertOk(await call(ann, 'delete', { data: { typedId: d.typedId } }));
  });

  test('partition isolation: another partition neither sees nor changes these delegations', async () => {
    const d = await add(ann, { delegate: 'bob', startDate: day(500), endDate: day(501) });
    const o = (op: string, body: unknown) =>
      send(other, `/workflowdelegationmanager.${op}`, { who: admin, ...json(body) });
    assert.equal(assertOk(await o('fetch', {})).length, 0);
    assertError(await o('delete', { data: { typedId: d.typedId } }), 404, -1);
    assertError(await o('update', { data: { typedId: d.typedId, note: 'x' } }), 404, -1);
    assertError(await o('enddate', { data: { typedId: d.typedId } }), 404, -1);
    // ann and bob are not users of the other partition.
    assert.deepEqual(
      (
        assertOk(
          await o('checkdates', { data: { delegate: 'bob', startDate: day(500), endDate: day(501) } }),
        ) as {
          code: string;
        }[]
      ).map((p) => p.code),
      ['UNKNOWN_USER'],
    );
  });
});
