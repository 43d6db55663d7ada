// Jobs (JST) on both databases: the runner claims and runs jobs, records node, progress and results;
// /admin.fetchjst and /fetch/JST show a user their own jobs only (admins all); cancellation (queued:
// at once; running: between steps); a job of a dead node (stale heartbeat) becomes INTERRUPTED and
// is retried, or FAILED when its kind is not retried; the per-partition concurrency bound.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import { CLIENT_READ_BODY } from '../helpers/criteria.ts';
import { assertError, assertOk, runnerFor, send, slotWith, waitForJob } from './helpers.ts';
import type { JobKinds, JobRunner } from '../../src/jobs/runner.ts';
import { createJob } from '../../src/jobs/store.ts';
import { permissionsOfRoles, type Principal } from '../../src/access/access.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('jobs', () => {
  let h: Harness;
  let runner: JobRunner;
  let adminId: number;
  let bobId: number;
  const bob = { user: 'bob', password: 'bob-password-1' };
  let running = 0;
  let maxRunning = 0;

  const kinds: JobKinds = {
    TEST_ECHO: {
      maxAttempts: 1,
      async run(ctx) {
        await ctx.progress({ progress: 50, message: 'half way' });
        return { echo: ctx.job.parameters.value, user: ctx.principal.loginName };
      },
    },
    TEST_SLOW: {
      maxAttempts: 1,
      async run(ctx) {
        running++;
        maxRunning = Math.max(maxRunning, running);
        try {
          const steps = Number(ctx.job.parameters.steps ?? 100);
          for (let i = 0; i < steps; i++) {
            await sleep(50);
            await ctx.progress({ progress: (100 * i) / steps });
          }
          return { steps };
        } finally {
          running--;
        }
      },
    },
    TEST_FAIL: {
      maxAttempts: 1,
      run() {
        throw new Error('internal detail that must not reach the job record');
      },
    },
  };

  function principal(userId: number, login: string, roles: string[]): Principal {
    return {
      partitionId: h.partitionId,
      partition: h.partition,
      userId,
      loginName: login,
      roles,
      groups: [],
      admin: roles.includes('ADMIN'),
      permissions: permissionsOfRoles(roles),
      via: 'basic',
      restriction: null,
    };
  }
  const newJob = (kind: string, parameters: Record<string, unknown> = {}, by = adminId, maxAttempts = 1) =>
    createJob(h.db, principal(by, by === adminId ? 'admin' : 'bob', by === adminId ? ['ADMIN'] : []), {
      jobName: `test ${kind}`,
      trackerType: kind,
      parameters,
      maxAttempts,
    });

  before(async () => {
    h = await startHarness({ env: { JOB_CONCURRENCY: '1' } });
    bobId = await h.newUser(bob.user, bob.password);
    const r = await h.db.query<{ id: number }>(
      "SELECT id FROM users WHERE partition_id = $1 AND login_name = 'admin'",
      [h.partitionId],
    );
    adminId = r.rows[0]!.id;
    runner = runnerFor(h, kinds).start();
  });
  after(async () => {
    await runner.stop();
    await h.close();
  });

  test('a job runs on this node; its record shows node, progress, messages and results', async () => {
    const job = await newJob('TEST_ECHO', { value: 42 });
    const done = await waitForJob(h, job.id);
    assert.equal(done.status, 'FINISHED');
    assert.equal(done.typedId, `${job.id}.JST`);
    assert.equal(done.trackerType, 'TEST_ECHO');
    assert.equal(done.processingNode, 'test-node');
    assert.equal(done.progress, 100);
    assert.ok(done.processingStart && done.processingEnd);
    assert.deepEqual(done.calculationResults, { echo: 42, user: 'admin' });
    assert.ok(done.messages.some((m: any) => m.text === 'half way'));
    assert.equal(done.createdBy, adminId);
  });

  test('jobs keep no record history: asOf on one job or the list is a -4, not the job as it is now', async () => {
    const job = await newJob('TEST_ECHO', { value: 'asof' });
    for (const path of [
      `/fetch/JST/${job.id}?asOf=2020-01-01T00:00:00Z`,
      '/fetch/JST?asOf=2020-01-01T00:00:00Z',
    ]) {
      const r = await send(h, path, { body: '{}', headers: { 'content-type': 'application/json' } });
      assertError(r, 400, -4);
      assert.ok(r.body.response.errors.asOf, JSON.stringify(r.body));
    }
  });

  test('/fetch/JST/{id} takes the fetch body of a read of one record, as /fetch/{TC}/{id}', async () => {
    const job = await newJob('TEST_ECHO', { value: 'body' });
    const json = { 'content-type': 'application/json' };
    // /admin.fetchjst/{id}, the interface's read of a job, takes the same bodies.
    for (const path of [`/fetch/JST/${job.id}`, `/admin.fetchjst/${job.id}`]) {
      for (const usual of [CLIENT_READ_BODY, { startRow: 0, endRow: 75 }]) {
        const r = await send(h, path, { body: JSON.stringify(usual), headers: json });
        assert.equal(assertOk(r)[0].id, job.id, path);
      }
      // Criteria or a page past the record would be ignored: a -4 naming the field, as for the other types.
      for (const [body, field] of [
        ['{"data":{"status":"FAILED"}}', 'data'],
        ['{"startRow":1,"endRow":75}', 'startRow'],
        ['{"bogus":1}', 'bogus'],
      ]) {
        const r = await send(h, path, { body, headers: json });
        assertError(r, 400, -4);
        assert.ok(
          Object.keys(r.body.response.errors).some((k) => k.includes(field!)),
          JSON.stringify(r.body),
        );
      }
    }
  });

  test('a failing job ends FAILED without internals in its record', async () => {
    const job = await newJob('TEST_FAIL');
    const done = await waitForJob(h, job.id);
    assert.equal(done.status, 'FAILED');
    assert.ok(!JSON.stringify(done).includes('internal detail'));
  });

  test('users see their own jobs only; admins all; fetch, fetchjst and canceljst alike', async () => {
    const mine = await newJob('TEST_ECHO', { value: 'bob' }, bobId);
    const admins = await newJob('TEST_ECHO', { value: 'admin' });
    await waitForJob(h, mine.id);
    await waitForJob(h, admins.id);
    assertOk(await send(h, `/admin.fetchjst/${mine.id}`, { who: bob }));
    assertOk(await send(h, `/fetch/JST/${mine.id}.JST`, { who: bob }));
    assertError(await send(h, `/admin.fetchjst/${admins.id}`, { who: bob }), 404, -1);
    assertError(await send(h, `/fetch/JST/${admins.id}`, { who: bob }), 404, -1);
    assertError(await send(h, `/admin.canceljst/${admins.id}`, { who: bob }), 404, -1);
    const list = await send(h, '/fetch/JST', {
      who: bob,
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    const rows = assertOk(list);
    assert.ok(rows.length >= 1);
    assert.ok(rows.every((j: any) => j.createdBy === bobId));
    // The client's filter is ANDed to the restriction, never replacing it.
    const filtered = assertOk(
      await send(h, '/fetch/JST', {
        who: bob,
        body: JSON.stringify({
          data: {
            _constructor: 'AdvancedCriteria',
            operator: 'or',
            criteria: [{ fieldName: 'createdBy', operator: 'equals', value: adminId }],
          },
        }),
        headers: { 'content-type': 'application/json' },
      }),
    );
    assert.equal(filtered.length, 0);
    const all = assertOk(
      await send(h, '/fetch/JST', {
        body: '{"data":{"trackerType":"TEST_ECHO"}}',
        headers: { 'content-type': 'application/json' },
      }),
    );
    assert.ok(all.some((j: any) => j.createdBy === bobId) && all.some((j: any) => j.createdBy === adminId));
    // A job's attachments follow the job: another user's are a 404 on every read (list, details,
    // data) and do not exist to checkifexists; the job's user and admins read them.
    const slot = await slotWith(h, 'job report', 'report.txt');
    const [att] = assertOk(await send(h, `/bdmanager.upload/${admins.id}.JST/${slot}`));
    assertError(await send(h, `/bdmanager.list/${admins.id}.JST`, { who: bob }), 404, -1);
    assertError(await send(h, `/bdmanager.download/${admins.id}.JST/${att.id}`, { who: bob }), 404, -1);
    assertError(await send(h, `/bdmanager.downloaddata/${att.id}`, { who: bob, method: 'GET' }), 404, -1);
    assert.equal(assertOk(await send(h, `/bdmanager.checkifexists/${att.id}`, { who: bob })), false);
    assert.equal(assertOk(await send(h, `/bdmanager.list/${admins.id}.JST`)).length, 1);
    // (Attaching takes the type's write permission, PARTITION_ADMIN.)
    assertOk(await send(h, `/bdmanager.upload/${mine.id}.JST/${await slotWith(h, 'for bob', 'b.txt')}`));
    assert.equal(assertOk(await send(h, `/bdmanager.list/${mine.id}.JST`, { who: bob })).length, 1);
    // No credentials: 401.
    const anon = await fetch(`${h.url}${h.config.basePath}/${h.partition}/admin.fetchjst/${mine.id}`, {
      method: 'POST',
    });
    assert.equal(anon.status, 401);
  });

  test('the general writes are refused for JST', async () => {
    const json = { 'content-type': 'application/json' };
    assertError(await send(h, '/add/JST', { body: '{"data":{"jobName":"x"}}', headers: json }), 400, -4);
    const job = await newJob('NO_SUCH_KIND');
    assertError(
      await send(h, '/update/JST', {
        body: JSON.stringify({ data: { typedId: `${job.id}.JST`, status: 'FINISHED' } }),
        headers: json,
      }),
      400,
      -4,
    );
    // Refused before anything is read: a stale version, an unknown id, a mass edit are the same -4
    // (a 409 would tell the client to retry a write that can never succeed).
    for (const [path, body] of [
      ['/update/JST', { data: { typedId: `${job.id}.JST`, status: 'FAILED' }, oldValues: { version: 0 } }],
      ['/update/JST', { data: { typedId: '999999.JST', status: 'FAILED' } }],
      ['/integrate/JST', { data: { typedId: `${job.id}.JST`, status: 'FAILED' } }],
      [
        '/massedit/JST',
        {
          filterCriteria: {},
          massEditRecords: [{ fieldName: 'status', massEditOperator: '=', fieldValue: 'X' }],
        },
      ],
      // Whatever the body: the type is refused first.
      ['/massedit/JST', { data: { status: 'FINISHED' } }],
      ['/update/JST', {}],
      ['/add/JST', [1]],
      ['/resetcolumn/JST/status', {}],
    ] as const) {
      const r = await send(h, path, { body: JSON.stringify(body), headers: json });
      assertError(r, 400, -4);
      assert.match(JSON.stringify(r.body.response.errors), /typeCode/, path);
    }
    assertError(
      await send(h, `/delete/JST`, {
        who: bob,
        body: JSON.stringify({ data: { typedId: `${job.id}.JST` } }),
        headers: json,
      }),
      403,
      -3,
    );
  });

  test('a job that has not ended is deleted by no path: by filter too it is a 409, nothing deleted', async () => {
    const json = { 'content-type': 'application/json' };
    const queued = await newJob('NO_SUCH_KIND'); // no runner takes it
    const ended = await newJob('TEST_ECHO', { value: 1 });
    await waitForJob(h, ended.id);
    const both = {
      _constructor: 'AdvancedCriteria',
      operator: 'or',
      criteria: [
        { fieldName: 'id', operator: 'equals', value: queued.id },
        { fieldName: 'id', operator: 'equals', value: ended.id },
      ],
    };
    for (const path of ['/delete/JST/batch', '/delete/JST/batch/forcefilter']) {
      const r = await send(h, path, { body: JSON.stringify({ data: both }), headers: json });
      assertError(r, 409, -1);
      assert.match(
        r.body.response.data,
        new RegExp(`Job ${queued.id}.JST is QUEUED_FOR_EXECUTION: cancel it`),
      );
    }
    assertError(
      await send(h, '/delete/JST', {
        body: JSON.stringify({ data: { typedId: `${queued.id}.JST` } }),
        headers: json,
      }),
      409,
      -1,
    );
    assert.equal(
      assertOk(await send(h, `/admin.fetchjst/${ended.id}`))[0].status,
      'FINISHED',
      'nothing deleted',
    );
    assertOk(await send(h, `/admin.canceljst/${queued.id}`));
    const deleted = assertOk(
      await send(h, '/delete/JST/batch/forcefilter', { body: JSON.stringify({ data: both }), headers: json }),
    )[0];
    assert.equal(deleted.deletedRecords, 2);
  });

  test('cancel: a queued job at once, a running one between steps, an ended one is a conflict', async () => {
    const queued = await newJob('NO_SUCH_KIND'); // no runner takes it
    const c1 = assertOk(await send(h, `/admin.canceljst/${queued.id}`))[0];
    assert.equal(c1.status, 'CANCELLED');
    assert.equal(c1.cancelRequested, true);

    const slow = await newJob('TEST_SLOW', { steps: 400 }, bobId);
    await waitForJob(h, slow.id, (j) => j.status === 'PROCESSING');
    const c2 = assertOk(await send(h, `/admin.canceljst/${slow.id}`, { who: bob }))[0];
    assert.equal(c2.cancelRequested, true);
    const ended = await waitForJob(h, slow.id);
    assert.equal(ended.status, 'CANCELLED');
    assert.ok(ended.progress < 100);
    // Cancelling again is harmless; cancelling a finished job is a conflict.
    assert.equal(assertOk(await send(h, `/admin.canceljst/${slow.id}`, { who: bob }))[0].status, 'CANCELLED');
    const quick = await newJob('TEST_ECHO', { value: 1 });
    await waitForJob(h, quick.id);
    assertError(await send(h, `/admin.canceljst/${quick.id}`), 409, -1);
    assertError(await send(h, '/admin.canceljst/999999999'), 404, -1);
    assertError(await send(h, '/admin.fetchjst/abc'), 400, -4);
    // An id past any id names no job: a 404, as for any record.
    for (const path of ['/admin.fetchjst/99999999999999999999999', '/fetch/JST/9223372036854775808'])
      assertError(await send(h, path), 404, -1);
  });

  test('a job of a dead node (stale heartbeat) becomes INTERRUPTED and is retried; a non-retried kind fails', async () => {
    const stale = async (kind: string, maxAttempts: number) => {
      const job = await newJob(kind, { value: 'again' }, adminId, maxAttempts);
      await h.db.query(
        `UPDATE jobs SET status = 'PROCESSING', processing_node = 'dead-node', attempts = 1,
                heartbeat_at = now() - interval '1 hour', processing_start = now() - interval '1 hour'
          WHERE partition_id = $1 AND id = $2`,
        [h.partitionId, job.id],
      );
      return job;
    };
    const retried = await stale('TEST_RETRY', 2);
    const failed = await stale('TEST_RETRY', 1);
    // A node that does not run TEST_RETRY still sweeps the dead node's jobs.
    const sweeper = runnerFor(h, {});
    await sweeper.sweep();
    let r = assertOk(await send(h, `/admin.fetchjst/${retried.id}`))[0];
    assert.equal(r.status, 'INTERRUPTED');
    assert.equal(r.processingNode, 'dead-node');
    assert.ok(r.messages.some((m: any) => /interrupted: node dead-node/.test(m.text)));
    const f = assertOk(await send(h, `/admin.fetchjst/${failed.id}`))[0];
    assert.equal(f.status, 'FAILED');
    assert.ok(f.messages.some((m: any) => /not retried/.test(m.text)));

    // A node that runs the kind takes the interrupted job over.
    const taker = runnerFor(h, {
      TEST_RETRY: { maxAttempts: 2, run: (ctx) => Promise.resolve({ attempt: ctx.job.attempts }) },
    }).start();
    try {
      r = await waitForJob(h, retried.id);
    } finally {
      await taker.stop();
    }
    assert.equal(r.status, 'FINISHED');
    assert.deepEqual(r.calculationResults, { attempt: 2 });
    assert.equal(r.processingNode, 'test-node');
  });

  test('a node that stops records the checkpoint of the report it stops at (a retry resumes after that work)', async () => {
    let reported = -1;
    const node = runnerFor(h, {
      TEST_CHECKPOINT: {
        maxAttempts: 2,
        async run(ctx) {
          for (let i = 0; ; i++) {
            await sleep(20); // the step's work, committed before its report
            reported = i;
            await ctx.progress({ progress: 1, checkpoint: { done: i } });
          }
        },
      },
    }).start();
    const job = await newJob('TEST_CHECKPOINT', {}, adminId, 2);
    try {
      for (let n = 0; reported < 3 && n < 500; n++) await sleep(10);
      assert.ok(reported >= 3, 'the job ran');
    } finally {
      await node.stop();
    }
    const r = await h.db.query<{ status: string; checkpoint: { done: number } }>(
      'SELECT status, checkpoint FROM jobs WHERE partition_id = $1 AND id = $2',
      [h.partitionId, job.id],
    );
    assert.equal(r.rows[0]!.status, 'INTERRUPTED');
    assert.deepEqual(r.rows[0]!.checkpoint, { done: reported }, 'the last report, made while stopping');
    await h.db.query(`UPDATE jobs SET status = 'CANCELLED' WHERE partition_id = $1 AND id = $2`, [
      h.partitionId,
      job.id,
    ]);
  });

  test('JOB_CONCURRENCY bounds the jobs of a partition processing at once', async () => {
    maxRunning = 0;
    const jobs = await Promise.all([1, 2, 3].map(() => newJob('TEST_SLOW', { steps: 4 })));
    for (const j of jobs) assert.equal((await waitForJob(h, j.id)).status, 'FINISHED');
    assert.equal(maxRunning, 1);
  });
});
