// Rows that describe a product (descriptions, references, cross-references, bill of materials,
// competition, extension rows), a customer (descriptions, extension rows) or a seller (extension
// rows) follow that record's user groups, as customer descriptions always did: a user outside a
// product's view group does not see its rows through the generic operations, and one outside its edit
// group does not write them (add, load, moving an SX row to such a seller). Rows of no stored
// parent are scoped by their own type alone. Over HTTP, on both databases.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { adv, eq } from '../helpers/criteria.ts';

interface Who {
  readonly user: string;
  readonly password: string;
}
const admin: Who = { user: ADMIN, password: ADMIN_PASSWORD };
/** Every permission but user management, no user group, not an administrator. */
const staff: Who = { user: 'scstaff', password: 'scstaff-password-1' };

/** A type describing a parent record: its row for a parent key, and the parent's key field. */
interface Case {
  readonly code: string;
  readonly parent: 'P' | 'C' | 'SL';
  readonly key: string;
  readonly row: (parentKey: string, n: number) => Record<string, unknown>;
}

const CASES: readonly Case[] = [
  {
    code: 'PDESC',
    parent: 'P',
    key: 'sku',
    row: (k, n) => ({ sku: k, language: ['de', 'fr', 'it', 'es'][n - 1]!, label: 'x' }),
  },
  {
    code: 'PR',
    parent: 'P',
    key: 'sku',
    row: (k, n) => ({ sku: k, relationType: `R${n}`, targetSku: 'SC-TARGET' }),
  },
  {
    code: 'PXREF',
    parent: 'P',
    key: 'sku',
    row: (k, n) => ({ sku: k, referenceType: 'EAN', externalId: `E${n}` }),
  },
  { code: 'PBOME', parent: 'P', key: 'sku', row: (k, n) => ({ sku: k, componentSku: `K${n}`, quantity: 2 }) },
  {
    code: 'PCOMP',
    parent: 'P',
    key: 'sku',
    row: (k, n) => ({ sku: k, competitor: `X${n}`, competitionDate: '2026-01-01', price: 1 }),
  },
  { code: 'PX', parent: 'P', key: 'sku', row: (k, n) => ({ name: `Ext${n}`, sku: k }) },
  {
    code: 'CDESC',
    parent: 'C',
    key: 'customerId',
    row: (k, n) => ({ customerId: k, language: ['de', 'fr', 'it', 'es'][n - 1]! }),
  },
  { code: 'CX', parent: 'C', key: 'customerId', row: (k, n) => ({ name: `Ext${n}`, customerId: k }) },
  { code: 'SX', parent: 'SL', key: 'sellerId', row: (k, n) => ({ name: `Ext${n}`, sellerId: k }) },
];

const PARENT_KEY = { P: 'sku', C: 'customerId', SL: 'sellerId' } as const;

describe('rows describing a product, customer or seller follow its user groups', () => {
  let h: Harness;
  const call = (path: string, body?: unknown, who: Who = admin) =>
    h.call(path, { basic: who, ...(body === undefined ? {} : { body }) });
  /** The parent keys of the rows of `c` that `who` sees, sorted. */
  const seen = async (c: Case, who: Who) =>
    okData(await call(`/fetch/${c.code}`, { data: adv(), endRow: 1000 }, who))
      .map((r: Record<string, unknown>) => r[c.key] as string)
      .filter((k: string) => k.startsWith('SC-'))
      .sort();

  before(async () => {
    h = await startHarness();
    await h.newUser(staff.user, staff.password, ['ADMIN_WO_USER_MGMT']);
    for (const parent of ['P', 'C', 'SL'] as const) {
      const key = PARENT_KEY[parent];
      okData(
        await call(`/integrate/${parent}`, [
          { data: { [key]: 'SC-HIDDEN', userGroupViewDetails: 'SECRET' } },
          { data: { [key]: 'SC-READONLY', userGroupEdit: 'SECRET' } },
          { data: { [key]: 'SC-OPEN' } },
        ]),
      );
    }
    for (const c of CASES) {
      for (const k of ['SC-HIDDEN', 'SC-READONLY', 'SC-OPEN', 'SC-NONE'])
        okData(await call(`/add/${c.code}`, { data: c.row(k, 1) }));
    }
  });
  after(() => h.close());

  for (const c of CASES) {
    test(`${c.code}: seen and written as its ${c.parent === 'SL' ? 'seller' : c.parent === 'C' ? 'customer' : 'product'}`, async () => {
      assert.deepEqual(await seen(c, admin), ['SC-HIDDEN', 'SC-NONE', 'SC-OPEN', 'SC-READONLY']);
      assert.deepEqual(await seen(c, staff), ['SC-NONE', 'SC-OPEN', 'SC-READONLY']);
      const [hidden] = okData(
        await call(`/fetch/${c.code}`, {
          data: adv(eq(c.key, 'SC-HIDDEN')),
        }),
      );
      expectError(await call(`/fetch/${c.code}/${hidden.id}`, undefined, staff), 404, -1);
      // Writing follows the parent's edit group: hidden and read-only parents are refused.
      expectError(await call(`/add/${c.code}`, { data: c.row('SC-HIDDEN', 2) }, staff), 403, -3);
      expectError(await call(`/add/${c.code}`, { data: c.row('SC-READONLY', 2) }, staff), 403, -3);
      okData(await call(`/add/${c.code}`, { data: c.row('SC-OPEN', 2) }, staff));
      const load = async (rows: Record<string, unknown>[]) => {
        const header = Object.keys(rows[0]!);
        const [loaded] = okData(
          await call(
            `/loaddata/${c.code}`,
            { data: { header, data: rows.map((r) => header.map((f) => r[f])) } },
            staff,
          ),
        );
        return loaded;
      };
      const refused = await load([c.row('SC-HIDDEN', 3), c.row('SC-OPEN', 3)]);
      assert.deepEqual([refused.inserted, refused.invalid], [1, 1], JSON.stringify(refused));
      assert.equal(refused.errors[0].field, c.key);
      // New rows of records the user may change, or of none stored, load as they are.
      const fine = await load([c.row('SC-OPEN', 4), c.row('SC-NONE', 4)]);
      assert.deepEqual([fine.inserted, fine.invalid], [2, 0], JSON.stringify(fine));
    });
  }

  test('a load joining by fields other than the parent key: matches updated, a row matching none refused alone (sixth audit)', async () => {
    okData(await call('/add/PDESC', { data: { sku: 'SC-OPEN', language: 'pt', label: 'old' } }, staff));
    const [r] = okData(
      await call(
        '/loaddata/PDESC',
        {
          data: {
            header: ['language', 'label'],
            data: [
              ['pt', 'joined'],
              ['xx', 'nomatch'],
            ],
            options: { joinFields: ['language'] },
          },
        },
        staff,
      ),
    );
    assert.deepEqual([r.updated, r.inserted, r.invalid], [1, 0, 1], JSON.stringify(r));
    assert.deepEqual([r.errors[0].row, r.errors[0].field], [1, 'sku'], JSON.stringify(r));
    const [pt] = okData(await call('/fetch/PDESC', { data: adv(eq('language', 'pt')) }, staff));
    assert.equal(pt.label, 'joined');
  });

  test('an SX row is not moved to a seller the user may not change', async () => {
    const [open] = okData(await call('/add/SX', { data: { name: 'Move', sellerId: 'SC-OPEN' } }, staff));
    expectError(
      await call(
        '/update/SX',
        { data: { id: open.id, sellerId: 'SC-READONLY' }, oldValues: { version: open.version } },
        staff,
      ),
      403,
      -3,
    );
    const [moved] = okData(
      await call(
        '/update/SX',
        { data: { id: open.id, sellerId: 'SC-NONE' }, oldValues: { version: open.version } },
        staff,
      ),
    );
    assert.equal(moved.sellerId, 'SC-NONE');
  });
});
