// `node bench/rebates.ts`: rebate record groups, API beside its peer. BENCH_RRG_GROUPS groups
// (default 10,000) are inserted by SQL into one partition; then, one client, one request at a time:
//   - calculate: `/rebaterecordgroup.calculate/{typedId}` over BENCH_RRG_CALLS distinct groups (default
//     300) with the 7-element logic of test/modules/rebates.test.ts (2 inputs, dates, a typed
//     attribute, a CRITICAL alert) — peer: one UPDATE ... RETURNING on a plain table (the same
//     columns, the primary key and a unique index on the name) computing the same values in SQL;
//   - fetch: `/fetch/RRG` with `{data: {uniqueName}}` — peer: SELECT * by the unique name.
// Prints calls/s of each and the ratio API / peer. Runs on embedded PGlite, or on PostgreSQL with
// DATABASE_URL; uses the test harness (a server on port 0 over a fresh partition, the session token).

import { performance } from 'node:perf_hooks';
import { startHarness } from '../test/helpers/app.ts';

const GROUPS = Number(process.env.BENCH_RRG_GROUPS ?? 10_000);
const CALLS = Number(process.env.BENCH_RRG_CALLS ?? 300);

const LOGIC = {
  uniqueName: 'VolumeRebate',
  validAfter: '2026-01-01',
  nature: 'REBATE',
  inputs: [
    { name: 'Volume', type: 'NUMBER', required: true },
    { name: 'Rate', type: 'PERCENT', default: 0.02 },
  ],
  elements: [
    { elementName: 'Days', expression: 'daysBetween(row.startDate, row.endDate)' },
    { elementName: 'Volume', expression: 'input.Volume', displayOptions: 0 },
    { elementName: 'Bonus', expression: 'row.attribute1' },
    { elementName: 'Rebate', expression: 'round(Volume * input.Rate + Bonus, 2)', formatType: 'MONEY' },
    { elementName: 'Cap', expression: 'if(Rebate > 1000, critical("rebate above 1000", 1000), Rebate)' },
    { elementName: 'LowVolume', expression: 'if(Volume < 500, warning("volume below 500", true), false)' },
    { elementName: 'Target', expression: 'targetDate' },
  ],
};

const PEER_UPDATE = `
  UPDATE bench_rrg_peer p SET
    results = jsonb_build_array(
      jsonb_build_object('resultName', 'Days', 'result', p.end_date - p.start_date),
      jsonb_build_object('resultName', 'Bonus', 'result', p.bonus),
      jsonb_build_object('resultName', 'Rebate', 'result', round(p.volume * 0.02 + p.bonus, 2)),
      jsonb_build_object('resultName', 'Cap', 'result', least(round(p.volume * 0.02 + p.bonus, 2), 1000),
                         'alertType', CASE WHEN round(p.volume * 0.02 + p.bonus, 2) > 1000 THEN 'CRITICAL' END),
      jsonb_build_object('resultName', 'LowVolume', 'result', p.volume < 500),
      jsonb_build_object('resultName', 'Target', 'result', p.target_date)),
    calculation_status = CASE WHEN round(p.volume * 0.02 + p.bonus, 2) > 1000 THEN 3
                              WHEN p.volume < 500 THEN 2 ELSE 1 END,
    calculation_date = now(), version = p.version + 1
  WHERE p.unique_name = $1 RETURNING *`;

const h = await startHarness();
try {
  // The session token (as clients do after login), not Basic: no password hash per call.
  const { token } = await h.login();
  const ok = async (path: string, body: unknown) => {
    const r = await h.call(path, { headers: { 'X-Ratecard-jwt': token }, body });
    if (r.status !== 200) throw new Error(`${path}: ${r.text}`);
    return r.body.response.data as any[];
  };
  await ok('/add/F', { data: LOGIC });
  await ok('/add/RBT', { data: { uniqueName: 'Volume', formulaName: 'VolumeRebate' } });
  await ok('/add/RBTAM', { data: { name: 'Volume', fieldName: 'attribute1', fieldType: 'NUMERIC' } });
  const t0 = performance.now();
  await h.db.query(
    `INSERT INTO rebate_record_groups (partition_id, unique_name, rebate_type, start_date, end_date, target_date,
                                       attribute1, inputs)
     SELECT $1, 'R-' || g, 'Volume', '2026-01-01', '2026-12-31', '2026-06-30', (g % 100)::text,
            jsonb_build_array(jsonb_build_object('name', 'Volume', 'value', g * 10))
       FROM generate_series(1, $2::int) g`,
    [h.partitionId, GROUPS],
  );
  await h.db.query(`CREATE TEMP TABLE IF NOT EXISTS bench_rrg_peer (
      id bigint PRIMARY KEY, unique_name text UNIQUE NOT NULL, volume numeric, bonus numeric,
      start_date date, end_date date, target_date date, results jsonb, calculation_status int,
      calculation_date timestamptz, version int NOT NULL DEFAULT 0)`);
  await h.db.query(
    `INSERT INTO bench_rrg_peer (id, unique_name, volume, bonus, start_date, end_date, target_date)
     SELECT g, 'R-' || g, g * 10, g % 100, '2026-01-01', '2026-12-31', '2026-06-30' FROM generate_series(1, $1::int) g`,
    [GROUPS],
  );
  await h.db.query('ANALYZE rebate_record_groups');
  await h.db.query('ANALYZE bench_rrg_peer');
  const ids = (
    await h.db.query<{ id: string }>(
      'SELECT id FROM rebate_record_groups WHERE partition_id = $1 ORDER BY id LIMIT $2',
      [h.partitionId, CALLS],
    )
  ).rows.map((r) => Number(r.id));
  console.log(`seeded ${GROUPS} groups in ${Math.round(performance.now() - t0)} ms (${h.db.kind})`);

  const rate = async (label: string, fn: (i: number) => Promise<unknown>): Promise<number> => {
    await fn(0); // warm-up (compiled logic, prepared plans)
    const t = performance.now();
    for (let i = 1; i < CALLS; i++) await fn(i);
    const perSecond = (CALLS - 1) / ((performance.now() - t) / 1000);
    console.log(`${label.padEnd(40)} ${perSecond.toFixed(0).padStart(7)} /s`);
    return perSecond;
  };
  const api = await rate('calculate (API)', (i) => ok(`/rebaterecordgroup.calculate/${ids[i]}.RRG`, {}));
  const peer = await rate('calculate (peer: UPDATE ... RETURNING)', (i) =>
    h.db.query(PEER_UPDATE, [`R-${i + 1}`]),
  );
  console.log(`calculate ratio API / peer: ${(api / peer).toFixed(3)}`);
  const fApi = await rate('fetch by uniqueName (API)', (i) =>
    ok('/fetch/RRG', { data: { uniqueName: `R-${i + 1}` } }),
  );
  const fPeer = await rate('fetch by uniqueName (peer: SELECT)', (i) =>
    h.db.query('SELECT * FROM bench_rrg_peer WHERE unique_name = $1', [`R-${i + 1}`]),
  );
  console.log(`fetch ratio API / peer: ${(fApi / fPeer).toFixed(3)}`);
} finally {
  await h.close();
}
