// `node bench/workflows.ts`: the cost of the workflow fetch views when a user takes part in many
// workflows. BENCH_WORKFLOWS pending workflows (default 20,000) are inserted by SQL for one
// submitter, each with one active step whose approver is `ann`; then each view is timed (median of
// BENCH_REPEAT calls, first page of 300 rows): `/workflowsmanager.fetch` as a WORKFLOW_ADMIN (no
// restriction), as the submitter (restriction = the ids he takes part in), `/fetch/active` as the
// approver, and one approve. Runs on embedded PGlite, or on PostgreSQL with DATABASE_URL. Uses the
// test harness (a server on port 0 over a fresh partition).

import { performance } from 'node:perf_hooks';
import { startHarness } from '../test/helpers/app.ts';

const N = Number(process.env.BENCH_WORKFLOWS ?? 20_000);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 5);

const h = await startHarness();
try {
  const users: Record<string, number> = {};
  for (const [name, roles] of [
    ['sub', ['PRICESHOP_EDIT']],
    ['ann', ['PRICESHOP_RO']],
    ['boss', ['WF_ADMIN']],
  ] as const) {
    users[name] = await h.newUser(name, `${name}-password-1`, [...roles]);
  }
  const pid = h.partitionId;
  const t0 = performance.now();
  await h.db.query(
    `INSERT INTO workflows (partition_id, code, approvable_id, label, workflow_status, current_step, submitted_by)
     SELECT $1, 'BENCH', g, 'doc ' || g, 'SUBMITTED', 1, $2 FROM generate_series(1, $3::int) g`,
    [pid, users.sub, N],
  );
  await h.db.query(
    `INSERT INTO workflow_steps (partition_id, workflow_id, step_no, rule, status, approver_users)
     SELECT partition_id, id, 1, 'ANY', 'ACTIVE', '{ann}' FROM workflows WHERE partition_id = $1`,
    [pid],
  );
  await h.db.query(
    `INSERT INTO workflow_assignees (partition_id, workflow_id, step_no, role, user_id)
     SELECT partition_id, id, 1, 'APPROVER', $2 FROM workflows WHERE partition_id = $1`,
    [pid, users.ann],
  );
  for (const t of ['workflows', 'workflow_assignees', 'workflow_steps']) await h.db.query(`ANALYZE ${t}`);
  console.log(`seeded ${N} workflows in ${Math.round(performance.now() - t0)} ms (${h.db.kind})`);

  const as = (user: string) => ({
    basic: { user, password: user === 'admin' ? 'admin-password-1' : `${user}-password-1` },
  });
  async function median(label: string, user: string, path: string, body: unknown = {}): Promise<void> {
    const times: number[] = [];
    let rows = 0;
    let total = 0;
    for (let i = 0; i < REPEAT; i++) {
      const t = performance.now();
      const r = await h.call(path, { ...as(user), body });
      times.push(performance.now() - t);
      if (r.status !== 200) throw new Error(`${label}: ${r.text}`);
      rows = r.body.response.data.length;
      total = r.body.response.totalRows;
    }
    times.sort((a, b) => a - b);
    console.log(
      `${label.padEnd(44)} ${times[Math.floor(times.length / 2)]!.toFixed(1).padStart(8)} ms  (${rows} rows of ${total})`,
    );
  }
  await median('fetch as WORKFLOW_ADMIN', 'boss', '/workflowsmanager.fetch');
  await median('fetch as the submitter (id restriction)', 'sub', '/workflowsmanager.fetch');
  await median('fetch/active as the approver', 'ann', '/workflowsmanager.fetch/active');
  await median('fetch/active filtered (label startsWith)', 'ann', '/workflowsmanager.fetch/active', {
    data: { fieldName: 'label', operator: 'startsWith', value: 'doc 1999' },
  });
  // Basic authentication costs the same in every call above; one login-free baseline for scale.
  await median('baseline: /notification.list as ann', 'ann', '/notification.list');
} finally {
  await h.close();
}
