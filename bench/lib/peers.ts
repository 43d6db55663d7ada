// The peers' tables. Never the project's SQL or structure for reads: a plain table of products'
// shape with the one index a DBA would add for each measured query. For writes (COPY, upserts) a
// table with exactly the project's indexes, because every index costs every write the same on both
// sides.
//   bench_peer_products  reads: primary key, unique sku, (partition_id, attribute1),
//                        (partition_id, (attribute2::numeric)), lower(label) text_pattern_ops,
//                        a trigram index on lower(label)
//   bench_peer_load      writes: the indexes `products` has in the server's database (migrations and
//                        the indexed attribute meta), under names of its own

import type { Db } from '../../src/db/db.ts';
import { attributeIndexes } from '../../src/engine/indexes.ts';
import { ATTRIBUTE_TYPES } from '../../src/engine/registry.ts';
import { INDEXED_META } from './data.ts';
import { PEER_LOAD_TABLE, PEER_TABLE } from './databases.ts';

const SHAPE = 'LIKE products INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING CONSTRAINTS';

const DBA_INDEXES = [
  `CREATE UNIQUE INDEX ${PEER_TABLE}_pkey ON ${PEER_TABLE} (partition_id, id)`,
  `CREATE UNIQUE INDEX ${PEER_TABLE}_sku ON ${PEER_TABLE} (partition_id, sku)`,
  `CREATE INDEX ${PEER_TABLE}_a1 ON ${PEER_TABLE} (partition_id, attribute1)`,
  `CREATE INDEX ${PEER_TABLE}_a2 ON ${PEER_TABLE} (partition_id, (attribute2::numeric))`,
  `CREATE INDEX ${PEER_TABLE}_label_prefix ON ${PEER_TABLE} (partition_id, lower(label) text_pattern_ops)`,
  `CREATE INDEX ${PEER_TABLE}_label_trgm ON ${PEER_TABLE} USING gin (lower(label) gin_trgm_ops)`,
];

/**
 * The write peer's index definitions: those of `products` in the peer's database, plus the indexes
 * the server built for the indexed attribute meta (the embedded peer is a database of its own, where
 * no meta asked for them).
 */
async function projectIndexes(peer: Db): Promise<string[]> {
  const r = await peer.query<{ name: string; def: string }>(
    `SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE tablename = 'products'`,
  );
  const defs = new Map(r.rows.map((x) => [x.name, x.def]));
  for (const m of INDEXED_META) {
    for (const spec of attributeIndexes('products', m.fieldName, ATTRIBUTE_TYPES[m.fieldType]!)) {
      if (!defs.has(spec.name)) defs.set(spec.name, `CREATE INDEX ${spec.name} ON products ${spec.body}`);
    }
  }
  let i = 0;
  return [...defs.values()].map((def) =>
    def
      .replace(/^(CREATE (?:UNIQUE )?INDEX) \S+ ON (?:public\.)?products /, (_, head: string) => {
        i++;
        return `${head} ${PEER_LOAD_TABLE}_${i} ON ${PEER_LOAD_TABLE} `;
      })
      .replace(/ ON public\.products /, ` ON ${PEER_LOAD_TABLE} `),
  );
}

/** Creates both peer tables (empty). Answers the number of indexes the write peer copied. */
export async function createPeerTables(peer: Db): Promise<number> {
  await peer.query(`DROP TABLE IF EXISTS ${PEER_TABLE}, ${PEER_LOAD_TABLE}`);
  await peer.query(`CREATE TABLE ${PEER_TABLE} (${SHAPE})`);
  for (const sql of DBA_INDEXES) await peer.query(sql);
  const defs = await projectIndexes(peer);
  await peer.query(`CREATE TABLE ${PEER_LOAD_TABLE} (${SHAPE})`);
  for (const sql of defs) await peer.query(sql);
  return defs.length;
}
