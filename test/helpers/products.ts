// Products in tests: for the tests of batch writes (a batch written at once against the same records
// written one by one under another sku prefix) their partitions, products compared across copies,
// and a transaction whose statements the database refuses; for the tests of index use, indexed
// attributes.

import type { Tx } from '../../src/db/db.ts';
import { syncIndexes } from '../../src/engine/indexes.ts';
import { ADMIN, ADMIN_PASSWORD, clientOf, startHarness, type Client, type Harness } from './app.ts';
import { okData } from './envelope.ts';

type Row = Record<string, any>;

const COPY_FIELDS = ['typedId', 'id', 'createDate', 'lastUpdateDate'];

/** What a product (and its `oldValues`) says, without what differs between two copies of it. */
export function stripCopy(r: Row, prefix: string): Row {
  const rest: Row = JSON.parse(JSON.stringify(r).replaceAll(prefix, ''));
  for (const k of COPY_FIELDS) delete rest[k];
  if (rest.oldValues) for (const k of COPY_FIELDS) delete rest.oldValues[k];
  return rest;
}

/** Reads of products through `api`: a record's history and the products of a sku prefix. */
export function productReads(api: Client) {
  return {
    /** A product's history (action, version, changes), its sku's prefix taken out. */
    historyOf: async (id: unknown, prefix: string) =>
      okData(await api(`/fetch/P/${String(id)}/history`, { sortBy: 'id' })).map((e: Row) =>
        JSON.parse(
          JSON.stringify({ action: e.action, version: e.version, changes: e.changes }).replaceAll(prefix, ''),
        ),
      ),
    /** The products whose sku starts with `prefix`, by sku. */
    skusOf: async (prefix: string) =>
      okData(await api('/fetch/P', { data: { sku: prefix }, textMatchStyle: 'startsWith', sortBy: 'sku' })),
  };
}

/**
 * Two partitions of one database (the second to check isolation) with an admin client each, and
 * custom attributes of products typed first (`/integrate/PAM` rows).
 */
export async function productPartitions(meta: readonly Row[]) {
  const h = await startHarness();
  const other = await startHarness({ shareDbWith: h });
  const api = await clientOf(h);
  const otherApi = await clientOf(other);
  okData(
    await api(
      '/integrate/PAM',
      meta.map((data) => ({ data })),
    ),
  );
  return {
    h,
    api,
    otherApi,
    close: async () => {
      await other.close();
      await h.close();
    },
  };
}

/** `tx` whose statements matching `statement` the database refuses with SQLSTATE `code`. */
export function refusingTx(tx: Tx, statement: RegExp, code: string | undefined): Tx {
  return {
    ...tx,
    query: (sql, params) =>
      statement.test(sql)
        ? Promise.reject(Object.assign(new Error('refused'), { code }))
        : tx.query(sql, params),
  };
}

/** Declares products' `attribute1` (TEXT) and `attribute2` (NUMERIC) `indexed`, and builds their indexes. */
export async function indexProductAttributes(h: Harness): Promise<void> {
  okData(
    await h.call('/add/PAM', {
      basic: { user: ADMIN, password: ADMIN_PASSWORD },
      body: [
        { data: { fieldName: 'attribute1', fieldType: 'TEXT', indexed: true } },
        { data: { fieldName: 'attribute2', fieldType: 'NUMERIC', indexed: true } },
      ],
    }),
  );
  await syncIndexes(h.db, 'products');
}
