// Two real server processes on one PostgreSQL share the job queue: asynchronous file loads sent to
// either are each run exactly once (one attempt, every row loaded once), by both nodes between them.
// PostgreSQL only: one embedded data directory cannot be opened by two processes.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDb, type Db } from '../../src/db/db.ts';
import { basic, startServer, stopServer, type Server } from '../helpers/process.ts';
import { uniqueName } from '../helpers/app.ts';

const onPostgres = process.env.DATABASE_URL !== undefined;
const PASSWORD = 'admin-password-1';

describe(
  'two server processes share the jobs',
  {
    skip: onPostgres ? false : 'needs DATABASE_URL: one embedded directory cannot be opened by two processes',
  },
  () => {
    const partition = uniqueName('jobs');
    let a: Server;
    let b: Server;
    let db: Db;

    before(async () => {
      // A high per-partition bound: each node's own capacity (8) is what spreads the jobs.
      const env = {
        DATABASE_URL: process.env.DATABASE_URL!,
        BOOTSTRAP_PARTITIONS: partition,
        JOB_CONCURRENCY: '50',
      };
      a = await startServer({ ...env, NODE_ID: 'node-a' });
      b = await startServer({ ...env, NODE_ID: 'node-b' });
      db = await createDb({ databaseUrl: process.env.DATABASE_URL, dataDir: ':memory:', dbPoolSize: 2 });
    });
    after(async () => {
      await Promise.all([a && stopServer(a), b && stopServer(b)]);
      if (db) {
        await db.query('DELETE FROM partitions WHERE name = $1', [partition]);
        await db.close();
      }
    });

    async function call(s: Server, path: string, body?: FormData): Promise<any> {
      const r = await fetch(`${s.url}/service/${partition}${path}`, {
        method: 'POST',
        headers: { authorization: basic(partition, 'admin', PASSWORD) },
        ...(body ? { body } : {}),
      });
      const json = (await r.json()) as any;
      assert.equal(r.status, 200, JSON.stringify(json));
      return json.response.data;
    }

    test('20 async loads through both nodes: each job runs once, every row is loaded once', async () => {
      const prefix = uniqueName('pr');
      const ROWS = 5000;
      const JOBS = 20;
      const started = await Promise.all(
        Array.from({ length: JOBS }, async (_, j) => {
          let csv = 'sku,label\n';
          for (let i = 0; i < ROWS; i++) csv += `${prefix}-${j}-${i},job ${j}\n`;
          const f = new FormData();
          f.append('fileName', new Blob([csv]), `load-${j}.csv`);
          return (await call(j % 2 === 0 ? a : b, '/loaddata.file/P/async', f))[0];
        }),
      );
      const ids = started.map((s: any) => s.jstId as number);
      const deadline = Date.now() + 60_000;
      let jobs: { id: number; status: string; attempts: number; processing_node: string }[] = [];
      while (Date.now() < deadline) {
        jobs = (
          await db.query<(typeof jobs)[number]>(
            'SELECT id, status, attempts, processing_node FROM jobs WHERE id = ANY($1::bigint[])',
            [ids],
          )
        ).rows;
        if (jobs.every((j) => ['FINISHED', 'FAILED', 'CANCELLED'].includes(j.status))) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.equal(jobs.length, JOBS);
      for (const j of jobs) {
        assert.equal(j.status, 'FINISHED', JSON.stringify(j));
        assert.equal(j.attempts, 1, `job ${j.id} was claimed ${j.attempts} times`);
      }
      assert.deepEqual([...new Set(jobs.map((j) => j.processing_node))].sort(), ['node-a', 'node-b']);
      const counts = await db.query<{ loaded: number; invalid: number }>(
        'SELECT loaded_records::int AS loaded, invalid_records::int AS invalid FROM upload_status WHERE job_id = ANY($1::bigint[])',
        [ids],
      );
      assert.equal(counts.rows.length, JOBS);
      for (const c of counts.rows) assert.deepEqual([c.loaded, c.invalid], [ROWS, 0]);
      const products = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM products WHERE sku LIKE $1',
        [`${prefix}-%`],
      );
      assert.equal(products.rows[0]!.n, JOBS * ROWS);
      // Either node answers for any job.
      const seen = await call(b, `/admin.fetchjst/${ids[0]}`);
      assert.equal(seen[0].status, 'FINISHED');
    });
  },
);
