// Indexes for operators: `/admin.indexes/{TypeCode}` lists the indexes of a type's table (name,
// definition, size, index scans so far), and the job kind INDEX_SYNC builds or drops the indexes that
// attribute meta marked `indexed` asks for (src/engine/indexes.ts). A write to an attribute-meta type
// (PAM, CXAM, ...) queues that job for the owner type's table; its progress is a JST record like any
// other job's.

import type { FastifyInstance } from 'fastify';
import type { Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import { attributeTables, listIndexes, syncIndexes, wantedIndexes } from '../../engine/indexes.ts';
import { findType, requireType, ownerOfMeta, type TypeDef } from '../../engine/registry.ts';
import { envelopeSchema, noArgumentsBody, ok } from '../../http/envelope.ts';
import { AppError } from '../../http/errors.ts';
import type { JobKind } from '../../jobs/runner.ts';
import { notifyJobQueued } from '../../jobs/runner.ts';
import { createJob } from '../../jobs/store.ts';

export const INDEX_SYNC = 'INDEX_SYNC';

/** After a committed write to an attribute-meta type: queue the index sync of its owner's table. */
export async function queueIndexSync(db: Db, principal: Principal, meta: TypeDef): Promise<void> {
  const owner = ownerOfMeta(meta);
  if (owner === undefined || owner.attributeMeta !== meta.code) return;
  await createJob(db, principal, {
    jobName: `Indexes of ${owner.code} (${owner.table})`,
    trackerType: INDEX_SYNC,
    targetObject: owner.table,
    parameters: { table: owner.table },
    maxAttempts: 3,
  });
  notifyJobQueued();
}

/** The attribute-meta type whose rows a deletion of `type`'s records removes too, if any. */
export function metaDeletedWith(type: TypeDef): TypeDef | undefined {
  return type.deletesMeta === undefined ? undefined : findType(type.deletesMeta);
}

/** Whether `type` is an attribute-meta type (its writes change which indexes are wanted). */
export function isAttributeMeta(type: TypeDef): boolean {
  const owner = ownerOfMeta(type);
  return owner !== undefined && owner.attributeMeta === type.code;
}

export function indexSyncJobKind(db: Db): JobKind {
  return {
    maxAttempts: 3,
    async run(ctx) {
      const table = (ctx.job.parameters as { table?: unknown }).table;
      if (typeof table !== 'string' || !attributeTables().has(table)) {
        throw new AppError('VALIDATION', `INDEX_SYNC: unknown table ${JSON.stringify(table)}`);
      }
      return syncIndexes(db, table, (done, total, what) =>
        ctx.progress({ progress: total === 0 ? 0 : (99 * done) / total, message: what }),
      );
    },
  };
}

export function adminIndexRoutes(app: FastifyInstance): void {
  app.post(
    '/admin.indexes/:typeCode',
    {
      config: { access: 'ATTRIBUTEMETA_EDIT' },
      schema: {
        summary: 'Indexes of a type: name, definition, size, index scans',
        tags: ['admin'],
        body: noArgumentsBody,
        params: {
          type: 'object',
          required: ['typeCode'],
          properties: { partition: { type: 'string' }, typeCode: { type: 'string', maxLength: 40 } },
        },
        response: {
          200: envelopeSchema(
            {
              type: 'object',
              properties: {
                name: { type: 'string' },
                definition: { type: 'string' },
                managed: { type: 'boolean' },
                valid: { type: 'boolean' },
                sizeBytes: { type: 'integer' },
                scans: { type: 'integer' },
              },
            },
            true,
          ),
        },
      },
    },
    async (req) => {
      const code = (req.params as { typeCode: string }).typeCode;
      const type = requireType(code);
      // The table's own indexes, and of the managed ones those this partition's meta asks for: another
      // partition's indexed attributes (and so its typing of them) are not this one's to see.
      const mine = attributeTables().has(type.table)
        ? await wantedIndexes(app.db, type.table, req.principal!.partitionId)
        : new Map();
      const indexes = await listIndexes(app.db, type.table);
      const shown = indexes.filter((x) => !x.managed || mine.has(x.name));
      // A list operation: the whole list, with its paging members (conventions.md "Envelope").
      return ok(req, shown, { startRow: 0, endRow: shown.length, totalRows: shown.length });
    },
  );
}
